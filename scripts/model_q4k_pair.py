#!/usr/bin/env python3
"""A host-side model of `q4k_pair_math` (kernels/gemv_k.cu), checked against Q4_K dequantization.

The bulk-copy GEMV gives each lane one Q4_K sub-block pair (2p, 2p+1) of a super-block: its 32
quant bytes, the super-block's 16-byte header, and the 64 int8 activations with their two
(d, d*sum) pairs. The kernel decodes the pair's scales and mins four bytes at a time with masks
(no branch on p). This script transcribes that arithmetic (dp4a as a 4-byte signed dot product)
and compares the four lanes' sum with the dot product of the dequantized super-block (as
gguf-py / llama.cpp dequantize Q4_K: get_scale_min_k4, low nibbles then high nibbles of each 32
quant bytes) and the dequantized activations. Pure Python, no dependencies:

    python3 scripts/model_q4k_pair.py [TRIALS]
"""
import random
import struct
import sys


def f16(b):
    return struct.unpack("<e", bytes(b))[0]


def s8(x):
    return x - 256 if x > 127 else x


def u32(b, o):
    return b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)


def dp4a(x, y, acc):
    return acc + sum(s8((x >> (8 * k)) & 255) * s8((y >> (8 * k)) & 255) for k in range(4))


def reference(blk, a, da):
    d, dm, sc, qs = f16(blk[0:2]), f16(blk[2:4]), blk[4:16], blk[16:144]

    def gsm(j):
        if j < 4:
            return sc[j] & 63, sc[j + 4] & 63
        return (sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4), (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4)

    total = 0.0
    for jp in range(4):
        (s0, m0), (s1, m1) = gsm(2 * jp), gsm(2 * jp + 1)
        for l in range(32):
            q = qs[32 * jp + l]
            total += (d * s0 * (q & 0xF) - dm * m0) * a[64 * jp + l] * da
            total += (d * s1 * (q >> 4) - dm * m1) * a[64 * jp + 32 + l] * da
    return total


def kernel_model(blk, a, da):
    hx, hy, hz, hw = (u32(blk, 4 * i) for i in range(4))
    ab = [v & 255 for v in a]
    ds = [(da, da * sum(a[32 * j:32 * j + 32])) for j in range(8)]
    d, dmin = f16(blk[0:2]), f16(blk[2:4])
    total = 0.0
    for p in range(4):  # the four lanes of a super-block
        qa = [u32(blk, 16 + 32 * p + 4 * i) for i in range(4)]
        qb = [u32(blk, 32 + 32 * p + 4 * i) for i in range(4)]
        x = [[u32(ab, 64 * p + 16 * k + 4 * i) for i in range(4)] for k in range(4)]
        if p < 2:
            sc, mn = hy & 0x3F3F3F3F, hz & 0x3F3F3F3F
        else:
            sc = (hw & 0x0F0F0F0F) | ((hy >> 2) & 0x30303030)
            mn = ((hw >> 4) & 0x0F0F0F0F) | ((hz >> 2) & 0x30303030)
        sh, m = 16 * (p & 1), 0x0F0F0F0F
        s0 = s1 = 0
        for i in range(4):
            s0 = dp4a(qa[i] & m, x[0][i], s0)
        for i in range(4):
            s0 = dp4a(qb[i] & m, x[1][i], s0)
        for i in range(4):
            s1 = dp4a((qa[i] >> 4) & m, x[2][i], s1)
        for i in range(4):
            s1 = dp4a((qb[i] >> 4) & m, x[3][i], s1)
        sc0, sc1 = (sc >> sh) & 0xFF, (sc >> (sh + 8)) & 0xFF
        m0, m1 = (mn >> sh) & 0xFF, (mn >> (sh + 8)) & 0xFF
        (dx, dy), (dz, dw) = ds[2 * p], ds[2 * p + 1]
        total += d * (sc0 * dx * s0 + sc1 * dz * s1) - dmin * (m0 * dy + m1 * dw)
    return total


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rng = random.Random(7)
    worst = 0.0
    for _ in range(trials):
        blk = [rng.randrange(256) for _ in range(144)]
        blk[0:2] = list(struct.pack("<e", rng.uniform(-0.05, 0.05)))
        blk[2:4] = list(struct.pack("<e", rng.uniform(-0.05, 0.05)))
        a = [rng.randrange(-127, 128) for _ in range(256)]
        da = rng.uniform(0.001, 0.1)
        ref, got = reference(blk, a, da), kernel_model(blk, a, da)
        err = abs(got - ref) / max(1e-9, abs(ref))
        worst = max(worst, err)
        if err > 1e-9:
            print(f"MISMATCH ref {ref} model {got} rel {err:.3e}")
            sys.exit(1)
    print(f"q4k_pair_math model: {trials} random super-blocks, worst relative error {worst:.2e}: PASS")


if __name__ == "__main__":
    main()

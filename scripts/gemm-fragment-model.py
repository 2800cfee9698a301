#!/usr/bin/env python3
"""NumPy model of kernels/gemm.cu's fragment indexing, for a machine without a GPU.

It lays a 64 x 256 weight tile and a 64 x 256 activation tile out as the kernel's shared
memory does (rows GEMM_LD = 272 bytes apart), has each of the four warps load its fragments
with the kernel's word offsets, multiplies them the way PTX defines `mma.sync` m16n8k16 and
m16n8k32 with s8 operands (lane = 4 g + t; A: row g + 8 * (i % 2), 32-bit word t + 4 * (i // 2);
B: column g, word t + 4 i; D element e: row g + 8 * (e // 2), column 2 t + e % 2), places each
accumulator where the kernel stores it, and checks the result against A @ W.T. It also checks
that a fragment load's 32 lanes hit 32 different banks.

    python3 scripts/gemm-fragment-model.py      # prints "k16 ok", "k32 ok", "banks ok" or fails
"""
import numpy as np

BM = BN = 64
KB = 8
LD = KB * 32 + 16


def word(buf, off):
    return buf[off:off + 4]


def mma(af, bf, k):
    """D (16 x 8) = A (16 x k) . B (k x 8) from per-lane fragments of 4-byte words."""
    am = np.zeros((16, k), np.int64)
    bm = np.zeros((k, 8), np.int64)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i, w in enumerate(af[lane]):
            r, kw = (i % 2) * 8 + g, (i // 2) * 4 + t
            am[r, 4 * kw:4 * kw + 4] = w
        for i, w in enumerate(bf[lane]):
            kw = i * 4 + t
            bm[4 * kw:4 * kw + 4, g] = w
    c = am @ bm
    return [[c[(l >> 2) + 8 * (e >> 1), 2 * (l & 3) + (e & 1)] for e in range(4)] for l in range(32)]


def run(k32, rng):
    w = rng.integers(-128, 128, (BM, KB * 32)).astype(np.int64)
    a = rng.integers(-128, 128, (BN, KB * 32)).astype(np.int64)
    sw = np.zeros(BM * LD, np.int64)
    sa = np.zeros(BN * LD, np.int64)
    for r in range(BM):
        sw[r * LD:r * LD + KB * 32] = w[r]
    for r in range(BN):
        sa[r * LD:r * LD + KB * 32] = a[r]
    out = np.zeros((BN, BM), np.int64)
    for warp in range(4):
        wm, wn = (warp >> 1) * 32, (warp & 1) * 32
        acc = {}
        for s in range(KB):
            for mt in range(2):
                for nt in range(4):
                    # Per lane: the kernel's a[mt][h][0..1] and b[nt][h].
                    fa, fb = [], []
                    for lane in range(32):
                        g, t = lane >> 2, lane & 3
                        ah, bh = [], []
                        for h in range(2):
                            k = s * 32 + h * 16 + t * 4
                            ah.append((word(sw, (wm + mt * 16 + g) * LD + k), word(sw, (wm + mt * 16 + g + 8) * LD + k)))
                            bh.append(word(sa, (wn + nt * 8 + g) * LD + k))
                        fa.append(ah)
                        fb.append(bh)
                    if k32:
                        d = mma([f[0] + f[1] for f in fa], [tuple(f) for f in fb], 32)
                    else:
                        d0 = mma([f[0] for f in fa], [(f[0],) for f in fb], 16)
                        d1 = mma([f[1] for f in fa], [(f[1],) for f in fb], 16)
                        d = [[x + y for x, y in zip(p, q)] for p, q in zip(d0, d1)]
                    for lane in range(32):
                        for e in range(4):
                            acc[(mt, nt, lane, e)] = acc.get((mt, nt, lane, e), 0) + d[lane][e]
        for (mt, nt, lane, e), v in acc.items():
            g, t = lane >> 2, lane & 3
            out[wn + nt * 8 + 2 * t + (e & 1), wm + mt * 16 + g + 8 * (e >> 1)] = v
    assert np.array_equal(out, a @ w.T), "k32" if k32 else "k16"


rng = np.random.default_rng(27)
run(False, rng)
print("k16 ok")
run(True, rng)
print("k32 ok")
banks = {((g * LD + t * 4) // 4) % 32 for g in range(8) for t in range(4)}
assert len(banks) == 32
print("banks ok")

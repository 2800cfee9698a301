#!/usr/bin/env python3
"""Generate the gguf-py bit-exactness fixtures for Glimmer's quant kernels.

Writes tests/fixtures/quant/ (read by tests/tests/quant_gguf_py.rs):

* dequant cases: random blocks of every computable type (random bytes with the scale fields
  overwritten by finite f16 values, including subnormal and zero scales), dequantized with
  ``gguf.quants.dequantize``;
* quantize cases: random f32 rows (plus rounding-tie and all-zero blocks) quantized with
  ``gguf.quants.quantize`` for the types gguf-py can quantize;
* model cases: for each real model found, the first 4 rows of the first tensor of each type in
  the file, with their file offset and an FNV-1a 64 hash of the gguf-py dequantization of the
  first 64 rows (so the model test can check more rows than are committed).

Every .bin is little-endian: raw block bytes, or f32 values. index.json describes them.

Models are looked up as in the Rust tests: $GLIMMER_MODELS, else ~/.cache/glimmer/models/.
Usage: python3 scripts/gen_quant_fixtures.py [--models DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import pathlib

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, GGUFReader
from gguf.quants import dequantize, quantize

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = ["smollm2-135m-instruct-q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]
SEED = 0x5EED_0017
MODEL_ROWS = 4
HASH_ROWS = 64

# (type, byte offsets of f16 scale fields within a block, blocks per case)
RANDOM_TYPES = [
    (T.Q4_0, [0], 64),
    (T.Q4_1, [0, 2], 64),
    (T.Q5_0, [0], 64),
    (T.Q8_0, [0], 64),
    (T.Q4_K, [0, 2], 8),
    (T.Q5_K, [0, 2], 8),
    (T.Q6_K, [208], 8),
    (T.F16, None, 2048),
    (T.BF16, None, 2048),
]
QUANT_TYPES = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q8_0, T.F16, T.BF16]


def type_name(t: T) -> str:
    """GgmlType::name() spelling: lower case except the K of K-quants."""
    n = t.name.lower()
    return n[:-2] + "_K" if n.endswith("_k") else n


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def sane_scales(rng: np.random.Generator, n: int) -> np.ndarray:
    """n finite f16 scales: mostly log-uniform 1e-4..10 with random sign, some subnormal, some 0."""
    mag = np.exp(rng.uniform(np.log(1e-4), np.log(10.0), n))
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    v = (mag * sign).astype(np.float32)
    kind = rng.random(n)
    v = np.where(kind < 0.05, 0.0, v)
    v = np.where((kind >= 0.05) & (kind < 0.12), sign * rng.uniform(1e-7, 6e-5, n), v)
    return v.astype(np.float16)


def random_blocks(rng: np.random.Generator, t: T, scale_offs, nblocks: int) -> np.ndarray:
    block, size = gguf.GGML_QUANT_SIZES[t]
    raw = rng.integers(0, 256, size=(nblocks, size), dtype=np.uint8)
    if t == T.F16:
        h = raw.reshape(-1).view(np.uint16).copy()
        nan = (h & 0x7C00) == 0x7C00
        nan &= (h & 0x03FF) != 0  # keep infinities, drop NaNs (payload handling differs)
        h[nan] = sane_scales(rng, int(nan.sum())).view(np.uint16)
        return h.view(np.uint8).reshape(nblocks, size)
    for off in scale_offs or []:
        raw[:, off : off + 2] = sane_scales(rng, nblocks).view(np.uint8).reshape(nblocks, 2)
    return raw


def random_data(rng: np.random.Generator, n: int) -> np.ndarray:
    """Rows shaped like weights: per-32 magnitudes over four decades, outliers, zeros, offsets."""
    scale = np.repeat(rng.choice([1e-3, 0.02, 0.3, 1.0, 7.5], n // 32), 32)
    shift = np.repeat(np.where(rng.random(n // 32) < 0.25, rng.uniform(-1, 1, n // 32), 0.0), 32)
    x = scale * (rng.uniform(-1, 1, n) + rng.uniform(-1, 1, n)) * 0.5 + shift * scale
    r = rng.random(n)
    x = np.where(r < 1 / 64, 0.0, x)
    x = np.where((r >= 1 / 64) & (r < 2 / 64), 8.0 * scale * rng.uniform(-1, 1, n), x)
    return x.astype(np.float32)


def edge_blocks() -> np.ndarray:
    """Blocks that hit rounding ties and degenerate scales."""
    zero = np.zeros(32)
    ties = np.zeros(32)
    ties[:9] = [127, 2.5, -2.5, 0.5, -0.5, 1.5, -126.5, 63.5, -0.0]
    neg_max = np.linspace(-8, 7, 32)  # max |x| negative, exact multiples of the step
    equal_abs = np.concatenate([np.full(16, 3.0), np.full(16, -3.0)])  # argmax tie
    const = np.full(32, 0.7)
    f16_ties = (1 + np.arange(32) / 2048.0 + 1 / 4096.0) * 1.0  # halfway between f16 values
    big = np.concatenate([np.full(16, 7e4), np.full(16, 6e-8)])  # f16 overflow / subnormal
    rows = [zero, ties, neg_max, equal_abs, const, f16_ties, big]
    return np.concatenate(rows).astype(np.float32)


class Writer:
    def __init__(self, out: pathlib.Path):
        self.out = out
        self.total = 0

    def bin(self, name: str, arr: np.ndarray) -> str:
        data = np.ascontiguousarray(arr).tobytes()
        (self.out / name).write_bytes(data)
        self.total += len(data)
        return name


def model_dir(arg: str | None) -> pathlib.Path:
    if arg:
        return pathlib.Path(arg)
    env = os.environ.get("GLIMMER_MODELS")
    if env:
        return pathlib.Path(env)
    return pathlib.Path.home() / ".cache" / "glimmer" / "models"


def model_cases(w: Writer, path: pathlib.Path) -> list[dict]:
    reader = GGUFReader(path)
    size = path.stat().st_size
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    seen: dict[T, object] = {}
    for t in reader.tensors:
        ty = T(t.tensor_type)
        prev = seen.get(ty)
        # Prefer the first matrix of each type; a vector only when the type has no matrix.
        if prev is None or (len(prev.shape) < 2 <= len(t.shape)):
            seen[ty] = t
    cases = []
    for ty, t in seen.items():
        row_len = int(t.shape[0])
        nrows = int(np.prod([int(s) for s in t.shape[1:]])) if len(t.shape) > 1 else 1
        block, bsize = gguf.GGML_QUANT_SIZES[ty]
        row_bytes = row_len // block * bsize
        off = int(t.data_offset)
        rows = min(MODEL_ROWS, nrows)
        hrows = min(HASH_ROWS, nrows)
        raw = np.array(mm[off : off + hrows * row_bytes]).reshape(hrows, row_bytes)
        assert (raw.reshape(-1) == t.data.reshape(-1).view(np.uint8)[: hrows * row_bytes]).all()
        deq = dequantize(raw, ty).astype(np.float32, copy=False).reshape(hrows, row_len)
        stem = f"{path.stem}.{t.name}"
        cases.append(
            {
                "model": path.name,
                "file_size": size,
                "tensor": t.name,
                "type": type_name(ty),
                "data_offset": off,
                "row_len": row_len,
                "rows": rows,
                "raw": w.bin(stem + ".raw.bin", raw[:rows]),
                "f32": w.bin(stem + ".f32.bin", deq[:rows]),
                "hash_rows": hrows,
                "f32_fnv1a64": fnv1a64(deq.astype("<f4").tobytes()),
            }
        )
        print(f"  {path.name}: {t.name} {type_name(ty)} row_len={row_len} rows={rows}")
    return cases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="directory holding the model files")
    ap.add_argument("--out", default=str(ROOT / "tests" / "fixtures" / "quant"))
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.bin"):
        old.unlink()
    w = Writer(out)
    rng = np.random.default_rng(SEED)

    deq_cases = []
    for ty, offs, nblocks in RANDOM_TYPES:
        raw = random_blocks(rng, ty, offs, nblocks)
        deq = dequantize(raw, ty).astype(np.float32, copy=False).reshape(-1)
        name = f"random_{type_name(ty)}"
        deq_cases.append(
            {
                "name": name,
                "type": type_name(ty),
                "n": int(deq.size),
                "raw": w.bin(name + ".raw.bin", raw),
                "f32": w.bin(name + ".f32.bin", deq),
            }
        )

    quant_cases = []
    for ty in QUANT_TYPES:
        x = np.concatenate([edge_blocks(), random_data(rng, 2048)])
        if ty == T.BF16:
            x = np.concatenate([x, np.array([np.nan, -np.inf, 3.0000002, 1e-40] * 8, np.float32)])
        with np.errstate(over="ignore"):  # the edge blocks overflow f16 on purpose
            q = quantize(x, ty).view(np.uint8).reshape(-1)
        name = f"quant_{type_name(ty)}"
        quant_cases.append(
            {
                "name": name,
                "type": type_name(ty),
                "n": int(x.size),
                "input": w.bin(name + ".in.f32.bin", x),
                "expected": w.bin(name + ".raw.bin", q),
            }
        )

    models = []
    mdir = model_dir(args.models)
    for m in MODELS:
        p = mdir / m
        if p.exists():
            models += model_cases(w, p)
        else:
            print(f"  skipping {m}: not in {mdir}")

    index = {
        "generator": "scripts/gen_quant_fixtures.py",
        "gguf_py": importlib.metadata.version("gguf"),
        "numpy": np.__version__,
        "dequant": deq_cases,
        "quantize": quant_cases,
        "models": models,
    }
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    print(f"wrote {len(deq_cases)} dequant, {len(quant_cases)} quantize, {len(models)} model cases,"
          f" {w.total / 1024:.0f} KiB, to {out}")


if __name__ == "__main__":
    main()

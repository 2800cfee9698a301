#!/usr/bin/env python3
"""Generate the Glimmer reference fixtures in tests/fixtures/glimmer/ (read by
tests/tests/glimmer_tiny.rs).

For each tiny preset (q8_0 = SynthConfig::tiny(), f32 = tiny_f32(), q4_k_m = tiny_q4_k_m())
this writes the model with `glimmer-synth` (built with cargo), evaluates TOKENS with the
NumPy float64 reference (scripts/glimmer_ref.py), and stores the model's sha256 and size, the
tokens, the logits of every position, and 8 positions to check: 0, the best-separated (largest
top-1 minus top-2 margin) position in 1..8 and 8..15, 15 (the last with its whole prefix in
the window), the best-separated in 16..24, 24..32 and 32..39, and 39 (the last).

Usage: python3 scripts/gen_glimmer_fixtures.py [--out DIR]
"""

import argparse
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import glimmer_ref  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
# 40 tokens (window 16): a seeded random draw below the control block, after <|begin_of_text|>;
# id 410 repeats (positions 4 and 32).
TOKENS = [504, 68, 291, 433, 410, 391, 32, 130, 60, 253, 389, 230, 241, 333, 194, 403, 107, 48,
          249, 14, 457, 427, 199, 221, 311, 390, 392, 1, 356, 228, 136, 369, 410, 117, 302, 483,
          52, 461, 162, 15]
PRESETS = [("tiny_ref.json", "q8_0"), ("tiny_f32_ref.json", "f32"),
           ("tiny_q4_k_m_ref.json", "q4_k_m")]
BINS = [(0, 1), (1, 8), (8, 15), (15, 16), (16, 24), (24, 32), (32, 39), (39, 40)]


def check_positions(logits):
    top2 = np.sort(logits, axis=1)[:, -2:]
    margin = (top2[:, 1] - top2[:, 0]) / np.abs(logits).max(axis=1)
    return [int(lo + np.argmax(margin[lo:hi])) for lo, hi in BINS]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "tests" / "fixtures" / "glimmer"))
    args = ap.parse_args()
    out_dir = pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cargo", "build", "-q", "-p", "glimmer-boards", "--bin", "glimmer-synth"],
                   cwd=ROOT, check=True)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    synth = target / "debug" / "glimmer-synth"
    with tempfile.TemporaryDirectory() as tmp:
        for name, ty in PRESETS:
            model = pathlib.Path(tmp) / f"tiny_{ty}.gguf"
            subprocess.run([str(synth), "--out", str(model), "--type", ty], check=True)
            blob = model.read_bytes()
            hp, w = glimmer_ref.load(str(model))
            logits = glimmer_ref.forward(hp, w, TOKENS)
            fx = {
                "preset": ty,
                "generator": f"glimmer-synth --type {ty} (seed 1)",
                "model_sha256": hashlib.sha256(blob).hexdigest(),
                "model_bytes": len(blob),
                "n_vocab": int(logits.shape[1]),
                "tokens": TOKENS,
                "check_positions": check_positions(logits),
                "logits": [[float(f"{v:.7g}") for v in row] for row in logits],
            }
            with open(out_dir / name, "w") as f:
                json.dump(fx, f, separators=(",", ":"))
                f.write("\n")
            print(f"{name}: {len(blob)} bytes, sha256 {fx['model_sha256'][:16]}…, "
                  f"check {fx['check_positions']}, max |logit| {np.abs(logits).max():.3f}")


if __name__ == "__main__":
    main()

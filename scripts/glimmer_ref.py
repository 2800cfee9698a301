#!/usr/bin/env python3
"""Independent NumPy float64 reference of the Muse Glimmer forward pass.

Reads a `glimmer` GGUF (the convention of boards/src/synth.rs) with gguf-py, dequantizes every
tensor with `gguf.quants.dequantize`, and evaluates a token sequence in float64, following
the ExecuTorch example's model (see glimmer-facts.md):

  x = rmsnorm(token_embd[t])                                  (scaleless, eps)
  per layer i (global and NoPE iff i % global_interval == global_interval - 1):
    h  = rmsnorm(x) * attn_norm                               (eps)
    q, k, v, g = Wq h, Wk h, Wv h, Wgate h
    q, k = per-head scaleless rmsnorm (eps), then interleaved RoPE on sliding layers only
    att = softmax(scale * q.k + mask) v                       (GQA: head j uses kv j // (nh/nkv))
          causal; sliding layers see keys with p_q - p_k < window
    x += rmsnorm(Wo (sigmoid(g) * att)) * post_attention_norm (post eps)
    h2 = rmsnorm(x) * ffn_norm                                (eps)
    x += rmsnorm(Wdown (silu(Wgate_ffn h2) * Wup h2)) * post_ffw_norm (post eps)
  logits = cap * tanh((Woutput (rmsnorm(x) * output_norm)) * logit_scale / cap)

Usage: glimmer_ref.py --model M.gguf --tokens 1,2,3 --out ref.json
The JSON holds the model's sha256 and size, the tokens, and the logits of every position.
"""

import argparse
import hashlib
import json
import os
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

ARCH = "glimmer"


def meta(reader, key, default=None):
    field = reader.fields.get(key)
    if field is None:
        if default is None:
            sys.exit(f"missing metadata key {key}")
        return default
    return field.contents()


def load(path):
    reader = GGUFReader(path)
    arch = meta(reader, "general.architecture")
    if arch != ARCH:
        sys.exit(f"{path}: architecture {arch!r}, expected {ARCH!r}")
    k = lambda s: meta(reader, f"{ARCH}.{s}")
    hp = {
        "n_layer": int(k("block_count")),
        "dim": int(k("embedding_length")),
        "n_head": int(k("attention.head_count")),
        "n_head_kv": int(k("attention.head_count_kv")),
        "head_dim": int(k("attention.key_length")),
        "head_dim_v": int(k("attention.value_length")),
        "theta": float(k("rope.freq_base")),
        "window": int(k("attention.sliding_window")),
        "eps": float(k("attention.layer_norm_rms_epsilon")),
        "post_eps": float(k("attention.post_norm_rms_epsilon")),
        "scale": float(k("attention.scale")),
        "global_interval": int(k("attention.global_interval")),
        "cap": float(k("final_logit_softcapping")),
        "logit_scale": float(k("logit_scale")),
    }
    w = {}
    for t in reader.tensors:
        a = dequantize(t.data, t.tensor_type).astype(np.float64)
        # gguf-py gives matrices as (ne1, ne0) = (out, in): y = W @ x.
        w[t.name] = a.reshape([int(d) for d in reversed(t.shape)]) if a.ndim != len(t.shape) else a
    return hp, w


def rmsnorm(x, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def rope_interleaved(x, pos, theta):
    """x: (T, H, D); rotates adjacent pairs (2j, 2j+1) by pos * theta^(-2j/D)."""
    d = x.shape[-1]
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # (D/2,)
    ang = pos[:, None].astype(np.float64) * inv[None, :]  # (T, D/2)
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


def forward(hp, w, tokens):
    t_len = len(tokens)
    nh, nkv, hd = hp["n_head"], hp["n_head_kv"], hp["head_dim"]
    eps, peps = hp["eps"], hp["post_eps"]
    pos = np.arange(t_len)
    x = rmsnorm(w["token_embd.weight"][np.asarray(tokens)], eps)  # (T, dim)
    dq = pos[:, None] - pos[None, :]  # p_q - p_k
    causal = dq >= 0
    sliding = causal & (dq < hp["window"])
    for i in range(hp["n_layer"]):
        p = lambda n: w[f"blk.{i}.{n}.weight"]
        is_global = i % hp["global_interval"] == hp["global_interval"] - 1
        h = rmsnorm(x, eps) * p("attn_norm")
        q = (h @ p("attn_q").T).reshape(t_len, nh, hd)
        k = (h @ p("attn_k").T).reshape(t_len, nkv, hd)
        v = (h @ p("attn_v").T).reshape(t_len, nkv, hp["head_dim_v"])
        g = (h @ p("attn_gate").T).reshape(t_len, nh, hp["head_dim_v"])
        q, k = rmsnorm(q, eps), rmsnorm(k, eps)
        if not is_global:
            q, k = rope_interleaved(q, pos, hp["theta"]), rope_interleaved(k, pos, hp["theta"])
        mask = causal if is_global else sliding
        att = np.empty((t_len, nh, hp["head_dim_v"]))
        group = nh // nkv
        for j in range(nh):
            kv = j // group
            s = hp["scale"] * (q[:, j, :] @ k[:, kv, :].T)  # (Tq, Tk)
            s = np.where(mask, s, -np.inf)
            s = np.exp(s - s.max(axis=1, keepdims=True))
            att[:, j, :] = (s / s.sum(axis=1, keepdims=True)) @ v[:, kv, :]
        y = (1.0 / (1.0 + np.exp(-g))) * att
        a = y.reshape(t_len, -1) @ p("attn_output").T
        x = x + rmsnorm(a, peps) * p("post_attention_norm")
        h2 = rmsnorm(x, eps) * p("ffn_norm")
        gate = h2 @ p("ffn_gate").T
        f = (gate / (1.0 + np.exp(-gate)) * (h2 @ p("ffn_up").T)) @ p("ffn_down").T
        x = x + rmsnorm(f, peps) * p("post_ffw_norm")
    z = (rmsnorm(x, eps) * w["output_norm.weight"]) @ w["output.weight"].T
    cap = hp["cap"]
    return cap * np.tanh(z * hp["logit_scale"] / cap)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="glimmer GGUF file")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--out", required=True, help="output JSON")
    args = ap.parse_args()
    tokens = [int(t) for t in args.tokens.split(",") if t.strip()]
    with open(args.model, "rb") as f:
        blob = f.read()
    hp, w = load(args.model)
    n_vocab = w["token_embd.weight"].shape[0]
    if not tokens or any(t < 0 or t >= n_vocab for t in tokens):
        sys.exit(f"tokens must be non-empty ids below {n_vocab}")
    logits = forward(hp, w, tokens)
    out = {
        "model": os.path.basename(args.model),
        "model_sha256": hashlib.sha256(blob).hexdigest(),
        "model_bytes": len(blob),
        "n_vocab": int(n_vocab),
        "hparams": hp,
        "tokens": tokens,
        # float32 precision is plenty for a 1e-2 relative comparison.
        "logits": [[float(f"{v:.7g}") for v in row] for row in logits],
    }
    with open(args.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    top = logits.argmax(axis=1)
    print(f"{len(tokens)} positions, max |logit| {np.abs(logits).max():.4f}, argmax {top.tolist()}")


if __name__ == "__main__":
    main()

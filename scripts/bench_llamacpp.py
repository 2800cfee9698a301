#!/usr/bin/env python3
"""llama.cpp (through llama-cpp-python) on the same benchmark as `glimmer bench`.

Usage: bench_llamacpp.py MODEL.gguf IDS.json THREADS GEN

Reads the prompt token ids written by `glimmer bench --save-ids`, so both implementations
prefill exactly the same tokens. llama.cpp runs with its default settings (batch 512, f16 KV
cache, its default attention path and weight repacking) apart from the thread count and a
context just large enough. After one untimed warm-up prefill, the prompt is prefilled in one
`eval` call, then GEN tokens are decoded greedily (argmax of the last logits) one at a time.
Times come from llama.cpp's own counters (llama_perf_context: t_p_eval_ms + t_eval_ms,
differences taken around each phase since they accumulate over the context), which exclude
the Python-side argmax; wall-clock times are printed beside them. The last line is JSON.
"""

import json
import sys
import time

import numpy as np
import llama_cpp
from llama_cpp import Llama


def main() -> None:
    model, ids_path, threads, gen = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(ids_path) as f:
        ids = json.load(f)
    llm = Llama(
        model_path=model,
        n_ctx=len(ids) + gen + 16,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    n_vocab = llm.n_vocab()
    ctx = llm._ctx.ctx

    def last_logits() -> np.ndarray:
        return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,))

    def snap():
        # Reading the logits synchronizes the context; llama.cpp adds a decode's time to its
        # counters only then.
        last_logits()
        p = llama_cpp.llama_perf_context(ctx)
        return p.t_p_eval_ms + p.t_eval_ms, p.n_p_eval + p.n_eval

    # Warm-up: pages the weights in.
    llm.eval(ids)
    llm.reset()

    # llama.cpp's counters accumulate over the context's life: take differences.
    (t_a, n_a) = snap()
    t0 = time.perf_counter()
    llm.eval(ids)
    prefill_wall = time.perf_counter() - t0
    (t_b, n_b) = snap()
    tokens = []
    t1 = time.perf_counter()
    for _ in range(gen):
        tok = int(np.argmax(last_logits()))
        tokens.append(tok)
        llm.eval([tok])
    decode_wall = time.perf_counter() - t1
    (t_c, n_c) = snap()
    prefill_s, decode_s = (t_b - t_a) / 1e3, (t_c - t_b) / 1e3
    out = {
        "prefill_tokens": n_b - n_a,
        "prefill_s": prefill_s,
        "prefill_tps": (n_b - n_a) / prefill_s,
        "gen_tokens": n_c - n_b,
        "decode_s": decode_s,
        "decode_tps": (n_c - n_b) / decode_s,
        "prefill_wall_s": prefill_wall,
        "decode_wall_s": decode_wall,
        "threads": threads,
        "version": llama_cpp.__version__,
        "tokens": tokens,
    }
    print(
        f"llama.cpp: prefill {out['prefill_tokens']} tokens {out['prefill_tps']:.1f} tok/s "
        f"(wall {len(ids) / prefill_wall:.1f}); decode {out['gen_tokens']} tokens "
        f"{out['decode_tps']:.1f} tok/s (wall {gen / decode_wall:.1f})"
    )
    print("LLAMA_JSON " + json.dumps(out))


if __name__ == "__main__":
    main()

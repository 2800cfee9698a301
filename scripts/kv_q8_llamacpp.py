#!/usr/bin/env python3
"""How far llama.cpp itself moves when its KV cache is q8_0 instead of f16 (flash attention,
same text as tests/tests/kv_pool.rs). Run with the reference venv from setup-reference.sh:
  ~/.cache/glimmer/refvenv/bin/python scripts/kv_q8_llamacpp.py
The figures justify the bounds of kv_pool.rs; BENCHMARKS.md has them."""
import sys, numpy as np
sys.path.insert(0, 'scripts')
import gen_golden as g
from llama_cpp import Llama
import llama_cpp
from pathlib import Path
text = ("Glimmer runs a language model on the device itself. Controllers talk to it over "
        "a Unix socket and hold chat sessions whose model calls sensor and actuator tools. "
        "The fan, the heater and the temperature sensor are on the simulated board.")
for name in ["smollm2-135m-instruct-q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]:
    path = g.models_dir() / name
    res = {}
    for kv in ["f16", "q8_0"]:
        extra = dict(flash_attn=True, type_k=8, type_v=8) if kv == "q8_0" else dict(flash_attn=True)
        g.LLAMA_ARGS.update(extra)
        llm = g.load_model(path)
        toks = llm.tokenize(text.encode(), add_bos=True)
        llm.reset(); llm.eval(toks)
        res[kv] = np.array(llm.scores[:len(toks)])
        del llm
    a, b = res["f16"], res["q8_0"]
    scale = np.abs(a).max(axis=1)
    rel = (np.abs(a-b).max(axis=1)/scale)
    agree = (a.argmax(1) == b.argmax(1)).mean()
    print(name, len(toks), "llama q8 vs f16 (flash): max rel", rel.max(), "top1", agree)

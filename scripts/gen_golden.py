#!/usr/bin/env python3
"""Generate the golden logit fixtures in tests/fixtures/golden/ with llama.cpp.

Run it with the reference venv (scripts/setup-reference.sh):

    ~/.cache/glimmer/refvenv/bin/python scripts/gen_golden.py [smollm2] [gemma3]

Models are read from $GLIMMER_MODELS (default ~/.cache/glimmer/models), as placed there
by scripts/fetch-models.sh. For every prompt the fixture holds the token ids, the top 16
logits and the largest |logit| of every prompt position, the logits of a fixed random
set of vocabulary ids at every 8th position and the last one, and 64 greedy tokens
(argmax, lowest id on ties, EOS ignored). Every logit is a float32 written in its
shortest decimal form that parses back (through f64) to the same float32.

llama.cpp settings: n_ctx 2048, n_batch 512, 2 threads, f16 KV cache, no flash attention,
and weight repacking OFF (model param use_extra_bufts = false). With repacking on, the
x86 CPU backend multiplies a batch in tiles of 4 rows and the leftover rows through a
different kernel, so the logits of a position change with where it fell in the batch.

llama.cpp quantizes activations to 8 bits for its quantized matmuls, and picks kernels
by batch size, so its logits move with the batch shape: by up to ~1.7 (SmolLM2) and
~2.5 (Gemma 3) logits, max over the vocabulary. Each prompt records that noise as a
yardstick for test tolerances: `batch_check` (the first half of the prompt run alone
vs the full run) and `decode_check` (one token at a time vs the full run, over the
first positions). `greedy_margins` gives top1 - top2 logit at each greedy step.
"""

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import llama_cpp
import llama_cpp.llama_cpp as llama_capi
from gguf import GGUFReader
from llama_cpp import Llama

import golden_prompts as P

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "tests" / "fixtures" / "golden"

N_TOP = 16
N_SAMPLE_IDS = 512
SAMPLE_EVERY = 8
N_GREEDY = 64
SAMPLE_SEED = 20240611
N_DECODE_CHECK = 32
LLAMA_ARGS = dict(n_ctx=2048, n_threads=2, n_batch=512, logits_all=True, seed=0, verbose=False)

MODELS = {
    "smollm2": {
        "file": "smollm2-135m-instruct-q4_1.gguf",
        "add_bos": False,
        "prompts": [
            ("short", P.SHORT),
            ("multiline", P.MULTILINE),
            ("unicode", P.UNICODE),
            ("chat", P.SMOL_CHAT),
            ("code", P.CODE),
            ("numbers", P.NUMBERS),
            ("tool", P.SMOL_TOOL),
            ("whitespace", P.WHITESPACE),
            ("long", P.LONG),
        ],
    },
    "gemma3": {
        "file": "gemma-3-270m-q4_k_m.gguf",
        "add_bos": True,
        "prompts": [
            ("short", P.SHORT),
            ("multiline", P.MULTILINE),
            ("unicode", P.UNICODE),
            ("chat", P.GEMMA_CHAT),
            ("code", P.CODE),
            ("numbers", P.NUMBERS),
            ("tool", P.GEMMA_TOOL),
            ("whitespace", P.WHITESPACE),
            ("long", P.LONG),
        ],
    },
}


def models_dir() -> Path:
    env = os.environ.get("GLIMMER_MODELS")
    return Path(env) if env else Path.home() / ".cache" / "glimmer" / "models"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def metadata_add_bos(path: Path) -> bool:
    field = GGUFReader(str(path)).fields.get("tokenizer.ggml.add_bos_token")
    if field is None:
        return False
    return bool(field.parts[field.data[0]][0])


def f32(x) -> float:
    """A float32 as the Python float of its shortest decimal form (exact round trip)."""
    v = np.float32(x)
    out = float(str(v))
    if np.float32(out) != v:
        raise AssertionError(f"float32 {v!r} does not round-trip through {out!r}")
    return out


def top_k(row: np.ndarray, k: int) -> list:
    """The k largest entries as [id, logit], descending, lowest id first on ties."""
    kth = np.partition(row, row.size - k)[row.size - k]
    cand = np.nonzero(row >= kth)[0]
    order = np.lexsort((cand, -row[cand]))[:k]
    return [[int(cand[i]), f32(row[cand[i]])] for i in order]


def argmax_lowest(row: np.ndarray) -> int:
    return int(np.argmax(row))  # numpy returns the first (lowest) index of the maximum


def load_model(path: Path) -> Llama:
    """Llama with weight repacking disabled (Llama() has no argument for it)."""
    default_params = llama_capi.llama_model_default_params

    def no_repack():
        params = default_params()
        params.use_extra_bufts = False
        return params

    llama_capi.llama_model_default_params = no_repack
    try:
        llm = Llama(model_path=str(path), **LLAMA_ARGS)
    finally:
        llama_capi.llama_model_default_params = default_params
    if llm.model_params.use_extra_bufts:
        raise AssertionError("weight repacking is still enabled")
    return llm


def batch_check(llm: Llama, tokens: list, full: np.ndarray) -> dict:
    """Checks that row p of the scores is position p, and measures how much a row
    changes with the batch it is computed in.

    The first half of the prompt is run on its own. Each of its rows must agree with
    the full run's row at the same position (top-1 within the full row's top 5, and
    closer to that row than to the next position's row). llama.cpp picks kernels by
    batch size (fewer than 8 rows take another path), so the rows need not be equal;
    the largest difference is recorded."""
    m = max(1, len(tokens) // 2)
    llm.reset()
    llm.eval(tokens[:m])
    prefix = np.array(llm.scores[:m], dtype=np.float32)
    worst = 0.0
    for p in range(m):
        same = float(np.max(np.abs(prefix[p] - full[p])))
        worst = max(worst, same)
        top5 = {i for i, _ in top_k(full[p], 5)}
        if argmax_lowest(prefix[p]) not in top5:
            raise AssertionError(f"row {p}: prefix-run argmax is not in the full run's top 5")
        if p + 1 < len(tokens):
            other = float(np.max(np.abs(prefix[p] - full[p + 1])))
            if same >= other:
                raise AssertionError(f"row {p}: prefix run is closer to position {p + 1}")
    return {"prefix": m, "max_abs_diff": f32(worst)}


def decode_check(llm: Llama, tokens: list, full: np.ndarray) -> dict:
    """Largest |logit| difference between one-token-at-a-time and batched evaluation."""
    m = min(len(tokens), N_DECODE_CHECK)
    llm.reset()
    worst = 0.0
    for p in range(m):
        llm.eval([tokens[p]])
        row = np.array(llm.scores[p], dtype=np.float32)
        worst = max(worst, float(np.max(np.abs(row - full[p]))))
    return {"positions": m, "max_abs_diff": f32(worst)}


def run_prompt(llm: Llama, name: str, text: str, add_bos: bool, sample_ids: np.ndarray) -> dict:
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)
    n = len(tokens)
    if n + N_GREEDY > llm.n_ctx():
        raise AssertionError(f"prompt {name} ({n} tokens) does not fit the context")
    llm.reset()
    llm.eval(tokens)
    if llm.n_tokens != n:
        raise AssertionError(f"llama.n_tokens {llm.n_tokens} != {n}")
    scores = np.array(llm.scores[:n], dtype=np.float32)
    if not np.all(np.isfinite(scores)):
        raise AssertionError(f"prompt {name}: non-finite logits")

    positions = [
        {"top": top_k(scores[p], N_TOP), "max_abs": f32(np.max(np.abs(scores[p])))}
        for p in range(n)
    ]
    sample_pos = sorted(set(range(0, n, SAMPLE_EVERY)) | {n - 1})
    sampled = [
        {"pos": p, "logits": [f32(v) for v in scores[p][sample_ids]]} for p in sample_pos
    ]

    greedy, margins = [], []
    row = scores[n - 1]
    for step in range(N_GREEDY):
        tok = argmax_lowest(row)
        two = np.partition(row, row.size - 2)[row.size - 2 :]
        greedy.append(tok)
        margins.append(f32(two[1] - two[0]))
        if step + 1 < N_GREEDY:
            llm.eval([tok])
            row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)

    batch = batch_check(llm, tokens, scores)
    decode = decode_check(llm, tokens, scores)
    print(
        f"  {name}: {n} tokens, greedy {llm.detokenize(greedy)[:60]!r}, "
        f"min greedy margin {min(margins):.4f}, prefix vs full {batch['max_abs_diff']:.4f}, "
        f"decode vs batch {decode['max_abs_diff']:.4f}",
        file=sys.stderr,
    )
    return {
        "name": name,
        "text": text,
        "add_bos": add_bos,
        "tokens": [int(t) for t in tokens],
        "positions": positions,
        "sampled": sampled,
        "greedy": greedy,
        "greedy_margins": margins,
        "batch_check": batch,
        "decode_check": decode,
    }


def generate(model: str) -> None:
    spec = MODELS[model]
    path = models_dir() / spec["file"]
    if not path.is_file():
        sys.exit(f"gen_golden: {path} not found; run scripts/fetch-models.sh first")
    add_bos = metadata_add_bos(path)
    if add_bos != spec["add_bos"]:
        sys.exit(f"gen_golden: {model}: metadata add_bos={add_bos}, expected {spec['add_bos']}")

    print(f"gen_golden: {model} ({path})", file=sys.stderr)
    llm = load_model(path)
    n_vocab = llm.n_vocab()
    rng = np.random.default_rng(SAMPLE_SEED)
    sample_ids = np.sort(rng.choice(n_vocab, size=N_SAMPLE_IDS, replace=False))

    prompts = [run_prompt(llm, name, text, add_bos, sample_ids) for name, text in spec["prompts"]]
    fixture = {
        "model": model,
        "file": spec["file"],
        "sha256": sha256_file(path),
        "llama_cpp_python": llama_cpp.__version__,
        "n_vocab": n_vocab,
        "llama_cpp": {
            "n_ctx": LLAMA_ARGS["n_ctx"],
            "n_batch": LLAMA_ARGS["n_batch"],
            "n_threads": LLAMA_ARGS["n_threads"],
            "flash_attn": False,
            "kv_type": "f16",
            "weight_repack": False,
            "system_info": llama_capi.llama_print_system_info().decode().strip(),
        },
        "sample_seed": SAMPLE_SEED,
        "sample_ids": [int(i) for i in sample_ids],
        "prompts": prompts,
    }
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"{model}.json"
    body = json.dumps(fixture, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    out.write_text(body + "\n", encoding="utf-8")
    print(f"gen_golden: wrote {out} ({out.stat().st_size} bytes)", file=sys.stderr)


def main() -> None:
    wanted = sys.argv[1:] or list(MODELS)
    for model in wanted:
        if model not in MODELS:
            sys.exit(f"gen_golden: unknown model {model!r} (known: {', '.join(MODELS)})")
        generate(model)


if __name__ == "__main__":
    main()

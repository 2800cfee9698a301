#!/usr/bin/env bash
# Glimmer against llama.cpp on the same model file, thread count and prompt token ids.
#
# Usage: scripts/bench.sh [THREADS] [PROMPT_TOKENS] [GEN] [MODEL...]
# Defaults: 2 threads, 512 prompt tokens, 128 decoded tokens, both real models in
# $GLIMMER_MODELS (or ~/.cache/glimmer/models). Needs the llama.cpp reference venv
# (scripts/setup-reference.sh): $LLAMA_PY, default /root/.cache/glimmer/refvenv/bin/python.
#
# `glimmer bench` tokenizes the prompt and saves the ids; scripts/bench_llamacpp.py feeds the
# same ids to llama.cpp. Glimmer runs first, then llama.cpp, one model at a time, never
# together. Prints each tool's output and a table with the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-2}
PROMPT=${2:-512}
GEN=${3:-128}
shift $(( $# < 3 ? $# : 3 ))
DIR=${GLIMMER_MODELS:-$HOME/.cache/glimmer/models}
MODELS=("$@")
if [ ${#MODELS[@]} -eq 0 ]; then
  MODELS=("$DIR/smollm2-135m-instruct-q4_1.gguf" "$DIR/gemma-3-270m-q4_k_m.gguf")
fi
LLAMA_PY=${LLAMA_PY:-/root/.cache/glimmer/refvenv/bin/python}
cargo build --release -q -p glimmer-boards --bin glimmer
BIN=${CARGO_TARGET_DIR:-target}/release/glimmer
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "machine: $(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
ROWS=()
for M in "${MODELS[@]}"; do
  name=$(basename "$M" .gguf)
  echo "== $name"
  "$BIN" bench --model "$M" --threads "$THREADS" --prompt-tokens "$PROMPT" --gen "$GEN" \
    --save-ids "$TMP/ids.json" | tee "$TMP/g.txt"
  "$LLAMA_PY" scripts/bench_llamacpp.py "$M" "$TMP/ids.json" "$THREADS" "$GEN" | tee "$TMP/l.txt"
  ROWS+=("$name|$(grep '^BENCH_JSON ' "$TMP/g.txt" | cut -d' ' -f2-)|$(grep '^LLAMA_JSON ' "$TMP/l.txt" | cut -d' ' -f2-)")
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "${ROWS[@]}" <<'PY'
import json, sys
print()
print("| model | threads | prefill tok/s glimmer | llama.cpp | ratio | decode tok/s glimmer | llama.cpp | ratio | bandwidth GB/s | MiB/token | decode limit tok/s | decode % of limit |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for row in sys.argv[1:]:
    name, g, l = row.split("|", 2)
    g, l = json.loads(g), json.loads(l)
    print(f"| {name} | {g['threads']} | {g['prefill_tps']:.1f} | {l['prefill_tps']:.1f} | "
          f"{g['prefill_tps'] / l['prefill_tps']:.2f}x | {g['decode_tps']:.1f} | {l['decode_tps']:.1f} | "
          f"{g['decode_tps'] / l['decode_tps']:.2f}x | {g['bandwidth_gbs']:.1f} | "
          f"{g['bytes_per_token'] / 2**20:.1f} | {g['limit_tps']:.1f} | "
          f"{100 * g['decode_tps'] / g['limit_tps']:.0f} % |")
    same = sum(1 for a, b in zip(g["tokens"], l["tokens"]) if a == b)
    first = next((i for i, (a, b) in enumerate(zip(g["tokens"], l["tokens"])) if a != b), None)
    print(f"<!-- {name}: greedy tokens agree up to position {first if first is not None else len(g['tokens'])} -->", file=sys.stderr)
PY

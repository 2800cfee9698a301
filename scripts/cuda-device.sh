#!/usr/bin/env bash
# Runs the CUDA backend's checks and benchmarks on a GPU machine, in one go.
#
# Run from the repository root with the prebuilt binary carried in (built on the host with
#   CARGO_TARGET_DIR=target-dev cargo build --release -p glimmer-jetson --example cuda-check &&
#   cp target-dev/release/examples/cuda-check target-dev/cuda-check
# ). Writes logs and summary.md to $OUT (default ./cuda-out).
#
#   CUDA_CHECK=path/to/cuda-check   the binary (default target-dev/cuda-check)
#   FULL=0                          skip the full-size (30B-shape, ~17 GB) synthetic model
#   E2E_FULL_TOKENS=8               tokens of the full model's CPU-vs-GPU comparison
#   MODELS_DIR=/tmp/glimmer-models  where the synthetic models are written (never under $OUT)
#   PHASE=all|tiny|full             tiny: nvcc check, kernel checks, tiny models (e2e, bench);
#                                   full: generate (once) and run the full-size model. A device
#                                   call is capped at 10 minutes: split the phases if needed.
#   STEP_TIMEOUT=420                seconds any one step may take
set -u
BIN=${CUDA_CHECK:-target-dev/cuda-check}
OUT=${OUT:-$PWD/cuda-out}
MODELS=${MODELS_DIR:-/tmp/glimmer-models}
FULL=${FULL:-1}
E2E_FULL_TOKENS=${E2E_FULL_TOKENS:-8}
PHASE=${PHASE:-all}
STEP_TIMEOUT=${STEP_TIMEOUT:-420}
mkdir -p "$OUT" "$MODELS"
export GLIMMER_CUDA_CACHE="$MODELS/kernel-cache"

# libnvrtc / libcuda: the toolkit's lib64 and the pip wheels of the image.
. "$(dirname "$0")/cuda-libs.sh"

log() { echo "== $*" | tee -a "$OUT/run.log"; }
TAIL=${TAIL:-40}  # `step` (cuda-libs.sh) shows each step's last 40 log lines

touch "$OUT/steps.txt"
log "machine"; { nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv; nproc; free -g; df -h /tmp; } > "$OUT/machine.txt" 2>&1; cat "$OUT/machine.txt"
chmod +x "$BIN" 2>/dev/null

if [ "$PHASE" = all ] || [ "$PHASE" = tiny ]; then
# NVRTC-independent syntax check of the kernels with the machine's nvcc (diagnostics only).
if command -v nvcc >/dev/null; then
  # The sources in the order compile.rs joins them (its SOURCES list).
  cat $(sed -n '/^pub const SOURCES/,/^];/p' jetson/src/compile.rs | grep -o '"[a-z_0-9]*\.cu"' | tr -d '"' | sed 's|^|kernels/|') > "$OUT/all.cu"
  step nvcc-ptxas nvcc -arch=sm_90 -cubin -Xptxas -v -o "$OUT/all.cubin" "$OUT/all.cu"
fi

step synth-tiny-q8_0 "$BIN" synth --out "$MODELS/tiny-q8_0.gguf"
step synth-tiny-q4_k_m "$BIN" synth --out "$MODELS/tiny-q4_k_m.gguf" --type q4_k_m
step synth-tiny-q5_k "$BIN" synth --out "$MODELS/tiny-q5_k.gguf" --type q5_k
step synth-tiny-q4_0 "$BIN" synth --out "$MODELS/tiny-q4_0.gguf" --type q4_0
# Mid-sized: rows wide enough for the fused norm + quantize and the two-rows-a-warp GEMV.
step synth-mid-q4_k_m "$BIN" synth --out "$MODELS/mid-q4_k_m.gguf" --type q4_k_m --dim 1024 --ff 2816 --vocab 4096 --layers 4
step ops "$BIN" ops --seed 1
step ops-seed2 "$BIN" ops --seed 2
for m in tiny-q8_0 tiny-q4_k_m tiny-q5_k tiny-q4_0 mid-q4_k_m; do
  step "e2e-$m" "$BIN" e2e --model "$MODELS/$m.gguf" --tokens 64
done
step bench-tiny "$BIN" bench --model "$MODELS/tiny-q4_k_m.gguf" --prefill 128 --steps 64 --bw-gib 2
fi
if [ "$FULL" = 1 ] && { [ "$PHASE" = all ] || [ "$PHASE" = full ]; }; then
  if [ ! -s "$MODELS/full-q4_k_m.gguf" ]; then
    step synth-full "$BIN" synth --out "$MODELS/full-q4_k_m.gguf" --full
  fi
  step bench-full "$BIN" bench --model "$MODELS/full-q4_k_m.gguf" --prefill 512 --steps 128 --bw-gib 4
  step e2e-full "$BIN" e2e --model "$MODELS/full-q4_k_m.gguf" --tokens "$E2E_FULL_TOKENS"
fi

{
  echo "# CUDA backend device run"
  echo
  echo '```'; cat "$OUT/machine.txt"; echo '```'
  echo
  echo "| step | exit |"; echo "|---|---|"
  sed 's/^STEP|\(.*\)|rc=\(.*\)$/| \1 | \2 |/' "$OUT/steps.txt"
  echo
  echo "| kind | what | value | limit / detail | verdict |"; echo "|---|---|---|---|---|"
  cat "$OUT"/*.log | grep '^SUMMARY|' | sed 's/^SUMMARY|//; s/|/ | /g; s/^/| /; s/$/ |/'
} > "$OUT/summary.md"
cat "$OUT/summary.md"

# Real models, when their pieces were carried in devcarry/ (a call carries at most 64 MiB, so
# the files travel in 55 MiB pieces over several calls while the machine stays warm, each call
# copying its piece to $MODELS/pieces):
# each golden fixture prompt, CPU engine against the device, top-1 at every position.
if [ "$PHASE" = real ]; then
  for m in smol:smollm2 gemma:gemma3; do
    piece=${m%%:*}; fixture=${m##*:}
    # Pieces are stashed in $MODELS/pieces by earlier calls (`mkdir -p ..; cp devcarry/* ..`).
    ls "$MODELS"/pieces/$piece.* >/dev/null 2>&1 || { log "no pieces of $piece"; continue; }
    cat "$MODELS"/pieces/$piece.* > "$MODELS/$piece.gguf"
    python3 - "$fixture" "$MODELS" <<'PY'
import json, sys
name, out = sys.argv[1], sys.argv[2]
d = json.load(open(f"tests/fixtures/golden/{name}.json"))
for i, p in enumerate(d["prompts"]):
    open(f"{out}/ids-{name}-{i}.txt", "w").write(" ".join(map(str, p["tokens"])))
PY
    for f in "$MODELS"/ids-$fixture-*.txt; do
      i=$(basename "$f" .txt)
      CUDA_CHECK_IDS=$f step "e2e-$i" "$BIN" e2e --model "$MODELS/$piece.gguf"
    done
  done
  grep -h '^SUMMARY|' "$OUT"/e2e-ids-*.log | sed 's/^SUMMARY|/| /; s/|/ | /g; s/$/ |/' > "$OUT/real.md"
  cat "$OUT/real.md"
fi

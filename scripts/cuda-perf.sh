#!/usr/bin/env bash
# On the device machine (see /work/.library/device): the CUDA decode-speed loop in one call.
# Carries every cuda-check* binary in $BIN_DIR (stripped release builds of
#   CARGO_TARGET_DIR=target-dev cargo build --release -p glimmer-jetson --example cuda-check
# ), so several builds can be compared in one call.
#
#   1. correctness first: `cuda-check ops` and `e2e` on tiny synthetic models (the first binary);
#   2. the 30B-shape Q4_K_M model, written on the device by our writer (once per machine), and
#      `cuda-check bench` of each binary on it (per-GEMV times, a per-op profile, prefill, and
#      decode with and without the graph and programmatic dependent launch);
#   3. NCU=1: Nsight Compute on the one-row GEMVs of a two-layer model of the same widths
#      (occupancy, registers, DRAM throughput, warp stalls), where the machine's runtime lets
#      ncu read the counters.
# Logs go to $OUT; SKIP_CHECKS=1 skips step 1; STEPS and PREFILL size the bench.
set -u
OUT=${OUT:-$PWD/perf-out}
M=${MODELS_DIR:-/tmp/glimmer-models}
B=${BIN_DIR:-target-dev}
mkdir -p "$OUT" "$M"
chmod +x "$B"/* 2>/dev/null
export GLIMMER_CUDA_CACHE="$M/kernel-cache"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cu13/lib") for p in nvidia.__path__))' 2>/dev/null) \
         $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cuda_nvrtc/lib") for p in nvidia.__path__))' 2>/dev/null); do
  [ -d "$d" ] && LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export LD_LIBRARY_PATH
step() { # name, command...: runs with a time limit, logs to $OUT/name.log, shows the tail
  local name=$1; shift
  local t0; t0=$(date +%s)
  timeout "${STEP_TIMEOUT:-300}" "$@" > "$OUT/$name.log" 2>&1
  echo "== $name rc=$? ($(( $(date +%s) - t0 )) s)"
  tail -n "${TAIL:-6}" "$OUT/$name.log"
}
first=$(ls "$B"/cuda-check* | head -n 1)

if [ "${SKIP_CHECKS:-0}" != 1 ]; then
  step ops "$first" ops --seed "${SEED:-8}"
  grep -c PASS "$OUT/ops.log"; grep -E "FAIL" "$OUT/ops.log" | head
  step synth-tiny "$first" synth --out "$M/tiny.gguf" --type q4_k_m
  step synth-tiny-q8 "$first" synth --out "$M/tiny-q8_0.gguf" --type q8_0
  step synth-mid "$first" synth --out "$M/mid.gguf" --type q4_k_m --dim 1024 --ff 2816 --vocab 4096 --layers 4
  for m in tiny tiny-q8_0 mid; do step "e2e-$m" "$first" e2e --model "$M/$m.gguf" --tokens 48; done
fi

[ -s "$M/full.gguf" ] || step synth-full "$first" synth --out "$M/full.gguf" --full
for c in "$B"/cuda-check*; do
  TAIL=${BENCH_TAIL:-30} step "bench-$(basename "$c")" "$c" bench --model "$M/full.gguf" \
    --prefill "${PREFILL:-512}" --steps "${STEPS:-128}" --bw-gib 4
done

if [ "${NCU:-0}" = 1 ] && command -v ncu >/dev/null; then
  [ -s "$M/two.gguf" ] || step synth-two "$first" synth --out "$M/two.gguf" --full --layers 2
  TAIL=60 step ncu ncu --clock-control none -k "regex:gemv_q[46]_k_(r1|rw2)" -c "${NCU_COUNT:-24}" \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    "$first" bench --model "$M/two.gguf" --prefill 8 --steps 4 --bw-gib 1
fi
grep -h "^SUMMARY|" "$OUT"/bench-*.log | sed 's/^SUMMARY|//'

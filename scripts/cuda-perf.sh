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
#   3. NCU=1: Nsight Compute on one eager decode step of a two-layer model of the same widths
#      (NCU_MODEL=mid: the small 4-layer `mid` model instead, quicker; NCU_ENV="VAR=V ...":
#      knobs for the traced runs, e.g. GLIMMER_GEMV_TMA=1; NCU_TAG=name: suffix for the log
#      names, so one call can trace several NCU_ENV settings without overwriting)
#      (every kernel's time, grid and DRAM bytes; NCU_CACHE=all flushes the caches before
#      each kernel, the default none keeps them warm as in a real step) and on its GEMVs
#      (occupancy, registers, DRAM throughput, warp stalls), where the machine's runtime lets
#      ncu read the counters.
# VARIANTS / ROUNDS / BENCH_ARGS: see step 2 below.
# Logs go to $OUT; SKIP_CHECKS=1 skips step 1, SKIP_BENCH=1 step 2; NCU_GEMV=0 skips the GEMV
# sections of step 3;
# STEPS and PREFILL size the bench.
set -u
OUT=${OUT:-$PWD/perf-out}
M=${MODELS_DIR:-/tmp/glimmer-models}
B=${BIN_DIR:-target-dev}
mkdir -p "$OUT" "$M"
chmod +x "$B"/* 2>/dev/null
export GLIMMER_CUDA_CACHE="$M/kernel-cache"
. "$(dirname "$0")/cuda-libs.sh"
first=$(ls "$B"/cuda-check* | head -n 1)

if [ "${SKIP_CHECKS:-0}" != 1 ]; then
  step ops "$first" ops --seed "${SEED:-8}"
  grep -c PASS "$OUT/ops.log"; grep -E "FAIL" "$OUT/ops.log" | head
  step synth-tiny "$first" synth --out "$M/tiny.gguf" --type q4_k_m
  step synth-tiny-q8 "$first" synth --out "$M/tiny-q8_0.gguf" --type q8_0
  step synth-mid "$first" synth --out "$M/mid.gguf" --type q4_k_m --dim 1024 --ff 2816 --vocab 4096 --layers 4
  for m in tiny tiny-q8_0 mid; do step "e2e-$m" "$first" e2e --model "$M/$m.gguf" --tokens 48; done
fi

if [ "${SKIP_BENCH:-0}" != 1 ]; then
[ -s "$M/full.gguf" ] || step synth-full "$first" synth --out "$M/full.gguf" --full
# VARIANTS="name=ENV;name=ENV": the first binary benched once per entry, with ENV (space-
# separated VAR=VALUE words, e.g. GLIMMER_CUDA_DEFINES=NORM_PRELOAD=0,GEMV_STREAM_HINT=1 or
# GLIMMER_GEMV_PREFETCH=16:8192: tuning knobs, no rebuild); ROUNDS repeats the list.
if [ -n "${VARIANTS:-}" ]; then
  for r in $(seq 1 "${ROUNDS:-1}"); do
    IFS=';' read -ra vs <<< "$VARIANTS"
    for v in "${vs[@]}"; do
      TAIL=${BENCH_TAIL:-30} step "bench-${v%%=*}-r$r" env ${v#*=} "$first" bench \
        --model "$M/full.gguf" --prefill "${PREFILL:-512}" --steps "${STEPS:-128}" --bw-gib 4 ${BENCH_ARGS:-}
    done
  done
else
  for c in "$B"/cuda-check*; do
    TAIL=${BENCH_TAIL:-30} step "bench-$(basename "$c")" "$c" bench --model "$M/full.gguf" \
      --prefill "${PREFILL:-512}" --steps "${STEPS:-128}" --bw-gib 4 ${BENCH_ARGS:-}
  done
fi
fi

if [ "${NCU:-0}" = 1 ] && command -v ncu >/dev/null; then
  NM=${NCU_MODEL:-two}
  if [ "$NM" = mid ]; then
    [ -s "$M/mid.gguf" ] || step synth-mid "$first" synth --out "$M/mid.gguf" --type q4_k_m --dim 1024 --ff 2816 --vocab 4096 --layers 4
  else
    [ -s "$M/two.gguf" ] || step synth-two "$first" synth --out "$M/two.gguf" --full --layers 2
  fi
  # Every kernel of one eager decode step, in launch order: duration, grid, block, registers,
  # DRAM bytes read; then the time by kernel name. One trace per binary.
  for c in "$B"/cuda-check*; do
    n=$(basename "$c")${NCU_TAG:+-$NCU_TAG}
    TAIL=1 step "trace-$n" env ${NCU_ENV:-} ncu --clock-control none --cache-control "${NCU_CACHE:-none}" --profile-from-start off \
      --csv --page raw --print-units base \
      --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,dram__bytes_read.sum \
      "$c" trace --model "$M/$NM.gguf" --prefill 512
    python3 - "$OUT/trace-$n.log" > "$OUT/trace-$n.txt" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
h = rows[0]; data = [r for r in rows[2:] if len(r) == len(h)]
col = {n: h.index(n) for n in h}
tot = 0.0; by = {}
for r in data:
    us = float(r[col["gpu__time_duration.sum"]].replace(",", "")) / 1e3
    tot += us
    name = r[col["Kernel Name"]]
    k = by.setdefault(name, [0, 0.0]); k[0] += 1; k[1] += us
    mb = float(r[col["dram__bytes_read.sum"]].replace(",", "")) / 1e6
    print(f'{name[:28]:28} {us:9.2f} us grid {r[col["launch__grid_size"]]:>7} block {r[col["launch__block_size"]]:>5} regs {r[col["launch__registers_per_thread"]]:>4} {mb:9.2f} MB')
print(f"kernels {len(data)}, sum {tot:.1f} us")
for name, (n, us) in sorted(by.items(), key=lambda kv: -kv[1][1]):
    print(f"BY|{name[:28]:28} {n:3} calls {us:9.2f} us")
PY
    echo "-- $n"; grep "^BY|\|^kernels" "$OUT/trace-$n.txt"
  done
  [ "${NCU_GEMV:-1}" = 1 ] && TAIL=10 step "ncu-gemv${NCU_TAG:+-$NCU_TAG}" env ${NCU_ENV:-} ncu --clock-control none --cache-control "${NCU_CACHE:-none}" --profile-from-start off -k "regex:gemv" \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis "$first" trace --model "$M/$NM.gguf" --prefill 512
fi
grep -h "^SUMMARY|" "$OUT"/bench-*.log | sed 's/^SUMMARY|//'

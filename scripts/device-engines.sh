#!/usr/bin/env bash
# On the device machine (see /work/.library/device): the daemon's GPU engines and the 30B-shape
# decode figures of both GPU backends, in one call. Carries target-dev/{cuda-check,gpu_bench,
# glimmerd,glimmerctl} (stripped release builds) and .gl (the Vulkan loader debs).
#
#   1. cuda-check e2e on a tiny synthetic Q4_K_M model: eager, graph and prefill against the
#      CPU engine, then the daemon's CudaEngine with two slots interleaved and a reset slot;
#   2. glimmerd --backend cuda and --backend wgpu (Vulkan on the H200) with the tiny model,
#      one glimmerctl chat turn each;
#   3. the full-size synthetic model (30B shape, Q4_K_M): gpu_bench (wgpu) and cuda-check
#      bench (CUDA, with and without the graph), each against the measured bandwidth.
# Logs go to $OUT. WGPU_ARGS adds gpu_bench options (--gpu-times); CUDA_FULL=0 skips the CUDA
# bench; every target-dev/gpu_bench* binary is run (to compare builds in one call).
set -u
OUT=${OUT:-$PWD/dev-out}
M=${MODELS_DIR:-/tmp/glimmer-models}
B=${BIN_DIR:-target-dev}
mkdir -p "$OUT" "$M"
chmod +x "$B"/* 2>/dev/null
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export GLIMMER_CUDA_CACHE="$M/kernel-cache"
. "$(dirname "$0")/cuda-libs.sh"
export XDG_RUNTIME_DIR=/tmp
step() { # name, command...: runs with a time limit, logs to $OUT/name.log, shows the tail
  local name=$1; shift
  local t0; t0=$(date +%s)
  timeout "${STEP_TIMEOUT:-300}" "$@" > "$OUT/$name.log" 2>&1
  echo "== $name rc=$? ($(( $(date +%s) - t0 )) s)"
  tail -n "${TAIL:-12}" "$OUT/$name.log"
}

step synth-tiny "$B/cuda-check" synth --out "$M/tiny.gguf" --type q4_k_m
step synth-tiny-q8 "$B/cuda-check" synth --out "$M/tiny-q8_0.gguf" --type q8_0
step e2e-tiny "$B/cuda-check" e2e --model "$M/tiny.gguf" --tokens 48
step e2e-tiny-q8 "$B/cuda-check" e2e --model "$M/tiny-q8_0.gguf" --tokens 48

for be in cuda wgpu; do
  sock=/tmp/gd-$be/d.sock
  "$B/glimmerd" --backend "$be" --model "$M/tiny.gguf" --socket "$sock" --ctx 4096 --sessions 2 \
    > "$OUT/glimmerd-$be.log" 2>&1 &
  pid=$!
  for _ in $(seq 120); do [ -S "$sock" ] && break; sleep 0.5; done
  echo 'Say something.' | step "chat-$be" "$B/glimmerctl" --socket "$sock" chat -n 24
  kill "$pid"; wait "$pid"
  echo "-- glimmerd-$be.log:"; tail -n 6 "$OUT/glimmerd-$be.log"
done

[ -s "$M/full.gguf" ] || step synth-full "$B/cuda-check" synth --out "$M/full.gguf" --full
for g in "$B"/gpu_bench*; do
  TAIL=${WGPU_TAIL:-8} step "wgpu-full-$(basename "$g")" "$g" "$M/full.gguf" --tokens 64 --prompt 16 --ctx 512 \
    --bandwidth-gbs 4287 ${WGPU_ARGS:-}
done
[ "${CUDA_FULL:-1}" = 1 ] && TAIL=40 step cuda-full "$B/cuda-check" bench --model "$M/full.gguf" --prefill 512 --steps 128 --bw-gib 4

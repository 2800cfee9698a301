#!/usr/bin/env bash
# On the device machine (see /work/.library/device): what a bulk-copy GEMV item costs by
# itself. The launch timeline (`cuda-check timeline`, KT_TRACE=1) of one decode step of the
# 30B shape, as it runs, with no weight copies (KT_NOLOAD=1: each item's chain alone, results
# garbage), and with three slots in flight a ring (`GLIMMER_GEMV_TMA=3:24:1:1:2:0:1`). The
# items column of the small launches (Q/K/V/gate, the output projection) against the first
# says whether they wait on their bytes or on their own arithmetic and reductions (the
# timeline's medians by launch shape; session 21's runs took the same medians with awk). Logs in
# $OUT/logs.tgz. Carries a stripped `cuda-check` in devcarry/ (see scripts/cuda-perf.sh).
. scripts/cuda-call-setup.sh
STEP_TIMEOUT=60 TAIL=1 step synth-full $C synth --out $M/full.gguf --full
timeline timeline-def GLIMMER_CUDA_DEFINES=KT_TRACE=1
timeline timeline-noload "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1"
timeline timeline-s3 GLIMMER_GEMV_TMA=3:24:1:1:2:0:1 GLIMMER_CUDA_DEFINES=KT_TRACE=1
for t in def noload s3; do
  echo "== $t"; timeline_shapes timeline-$t
done
tar czf $R/logs.tgz -C $OUT .

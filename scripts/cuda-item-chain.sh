#!/usr/bin/env bash
# On the device machine (see /work/.library/device): what a bulk-copy GEMV item costs by
# itself. The launch timeline (`cuda-check timeline`, KT_TRACE=1) of one decode step of the
# 30B shape, as it runs, with no weight copies (KT_NOLOAD=1: each item's chain alone, results
# garbage), and with three slots in flight a ring (`GLIMMER_GEMV_TMA=3:24:1:1:2:0:1`). The
# items column of the small launches (Q/K/V/gate, the output projection) against the first
# says whether they wait on their bytes or on their own arithmetic and reductions. Logs in
# $OUT/logs.tgz. Carries a stripped `cuda-check` in devcarry/ (see scripts/cuda-perf.sh).
R=$OUT; OUT=/tmp/glimmer-logs; mkdir -p $OUT; export OUT
M=/tmp/glimmer-models; export GLIMMER_CUDA_CACHE=$M/kernel-cache; mkdir -p $M
chmod +x devcarry/*; . scripts/cuda-libs.sh
C=devcarry/cuda-check
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
STEP_TIMEOUT=60 TAIL=1 step synth-full $C synth --out $M/full.gguf --full
STEP_TIMEOUT=60 TAIL=0 step timeline-def env GLIMMER_CUDA_DEFINES=KT_TRACE=1 $C timeline --model $M/full.gguf --prefill 512
STEP_TIMEOUT=60 TAIL=0 step timeline-noload env "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1" $C timeline --model $M/full.gguf --prefill 512
STEP_TIMEOUT=60 TAIL=0 step timeline-s3 env GLIMMER_GEMV_TMA=3:24:1:1:2:0:1 GLIMMER_CUDA_DEFINES=KT_TRACE=1 $C timeline --model $M/full.gguf --prefill 512
for t in def noload s3; do
  echo "== $t"; grep -E "sums" $OUT/timeline-$t.log
  # Medians over the 52 layers of each launch kind (rows 0..207, four a layer).
  for k in 0 1 2 3; do
    med() { awk -v k=$k -v c=$1 '/^ +[0-9]+ tma/ && $1 < 208 && $1 % 4 == k { print $c }' $OUT/timeline-$t.log | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
    echo "  kind $k (0 qkv, 1 proj, 2 gate/up, 3 down): span $(med 5)  gap $(med 7)  staged $(med 9)  items $(med 11)  end spread $(med 13)"
  done
done
tar czf $R/logs.tgz -C $OUT .

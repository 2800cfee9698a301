#!/usr/bin/env bash
# On the device machine (see /work/.library/device): the checks and timings that sessions 19-20's
# kernels (deferred norms, attn_inputs deferred into attention) need, most wanted first, so that a call cut short at its limit still brings
# back the first rows. Logs are tarred into $OUT/logs.tgz every 30 s (a call returns at most
# eight files). Carries a stripped `cuda-check` in devcarry/ (see scripts/cuda-perf.sh).
R=$OUT; OUT=/tmp/glimmer-logs; mkdir -p $OUT; export OUT
( while sleep 30; do tar czf $R/logs.tgz -C $OUT . 2>/dev/null; done ) &
TP=$!
M=/tmp/glimmer-models; export GLIMMER_CUDA_CACHE=$M/kernel-cache; mkdir -p $M
chmod +x devcarry/*; . scripts/cuda-libs.sh
C=devcarry/cuda-check
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
STEP_TIMEOUT=60 TAIL=3 step ops $C ops --seed 29; grep -c PASS $OUT/ops.log; grep -E "FAIL|error" $OUT/ops.log | head -5; grep -cE "^(prenorm|matmul_many[12]_tma_wide|attn_prep)" $OUT/ops.log
STEP_TIMEOUT=30 TAIL=3 step synth-mid $C synth --out $M/mid.gguf --type q4_k_m --dim 1024 --ff 2816 --vocab 4096 --layers 4
STEP_TIMEOUT=40 TAIL=1 step e2e-mid-pre env GLIMMER_FUSE_NORM=4 $C e2e --model $M/mid.gguf --tokens 48
grep -H "^  decode\|^  prefill\|slot 1" $OUT/e2e-mid-*.log | cut -c1-240
STEP_TIMEOUT=60 TAIL=3 step synth-full $C synth --out $M/full.gguf --full
# The default and the deferred norms, twice each.
N=GLIMMER_FUSE_NORM=4
for v in "def=" "pre=$N" "def2=" "pre2=$N"; do
  STEP_TIMEOUT=50 TAIL=0 step bench-${v%%=*} env ${v#*=} $C bench --model $M/full.gguf --prefill 512 --steps 64 --bw-gib 4 --quick
  grep -E "decode \(graph|(GEMVs|everything but|norms|attention) \(round 1|memcpy" $OUT/bench-${v%%=*}.log | sed 's/PDL.*launches)//' | head -8
done
# Where each GEMV launch's time goes (kernels rebuilt with the stamps).
for v in "pre=$N"; do
  STEP_TIMEOUT=90 TAIL=0 step timeline-${v%%=*} env ${v#*=} GLIMMER_CUDA_DEFINES=KT_TRACE=1 $C timeline --model $M/full.gguf --prefill 512
  grep -E "sums|memcpy" $OUT/timeline-${v%%=*}.log
  grep -E "^ +[0-9]+ " $OUT/timeline-${v%%=*}.log | head -8
done
kill $TP 2>/dev/null; tar czf $R/logs.tgz -C $OUT .; ls $OUT | wc -l

#!/usr/bin/env bash
# On the device machine (see /work/.library/device): the checks and timings the next session
# starts from, most wanted first, so that a call cut short at its limit still brings back the
# first rows: every kernel check (`cuda-check ops`; the wide q8 norms over clusters of 16 are
# the default since session 21, the one-block norms checked with it off), e2e on the 4-layer
# `mid` model, then the 30B-shape decode of the default and of the one-block norms
# (`GLIMMER_NORM_CLUSTER=0`) alternately. Logs are tarred into $OUT/logs.tgz every
# 30 s (a call returns at most eight files). Carries a stripped `cuda-check` in devcarry/ (see
# scripts/cuda-perf.sh).
R=$OUT; OUT=/tmp/glimmer-logs; mkdir -p $OUT; export OUT
( while sleep 30; do tar czf $R/logs.tgz -C $OUT . 2>/dev/null; done ) &
TP=$!
M=/tmp/glimmer-models; export GLIMMER_CUDA_CACHE=$M/kernel-cache; mkdir -p $M
chmod +x devcarry/*; . scripts/cuda-libs.sh
C=devcarry/cuda-check
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
STEP_TIMEOUT=60 TAIL=3 step ops $C ops --seed 32; grep -c PASS $OUT/ops.log; grep -E "FAIL|error" $OUT/ops.log | head -5
STEP_TIMEOUT=30 TAIL=3 step synth-mid $C synth --out $M/mid.gguf --type q4_k_m --dim 1024 --ff 2816 --vocab 4096 --layers 4
STEP_TIMEOUT=40 TAIL=1 step e2e-mid $C e2e --model $M/mid.gguf --tokens 48
grep -H "^  decode\|slot 1" $OUT/e2e-mid*.log | cut -c1-280
STEP_TIMEOUT=60 TAIL=3 step synth-full $C synth --out $M/full.gguf --full
for r in 1 2; do
  for v in def one; do
    case $v in def) E=;; one) E=GLIMMER_NORM_CLUSTER=0;; esac
    STEP_TIMEOUT=50 TAIL=0 step bench-$v$r env $E $C bench --model $M/full.gguf --prefill 512 --steps 64 --bw-gib 4 --quick
    grep -E "decode \(graph|(GEMVs|norms|everything but) \(round 1|memcpy" $OUT/bench-$v$r.log | sed 's/PDL.*launches)//' | head -6
  done
done
kill $TP 2>/dev/null; tar czf $R/logs.tgz -C $OUT .; ls $OUT | wc -l

#!/usr/bin/env bash
# On the device machine (see /work/.library/device): the checks and timings the next session
# starts from, most wanted first, so that a call cut short at its limit still brings back the
# first rows: every kernel check (`cuda-check ops`, with session 21's deeper first rings), e2e
# on the 4-layer `mid` model with and without them, then the 30B-shape decode of the default
# and of deeper first rings (`GLIMMER_GEMV_TMA=...:RING`, TmaGemv::ring) alternately, and the
# launch timeline (KT_TRACE=1) of the deeper rings. Logs are tarred into $OUT/logs.tgz every
# 30 s (a call returns at most eight files). Carries a stripped `cuda-check` in devcarry/ (see
# scripts/cuda-perf.sh).
R=$OUT; OUT=/tmp/glimmer-logs; mkdir -p $OUT; export OUT
( while sleep 30; do tar czf $R/logs.tgz -C $OUT . 2>/dev/null; done ) &
TP=$!
M=/tmp/glimmer-models; export GLIMMER_CUDA_CACHE=$M/kernel-cache; mkdir -p $M
chmod +x devcarry/*; . scripts/cuda-libs.sh
C=devcarry/cuda-check
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
STEP_TIMEOUT=60 TAIL=3 step ops $C ops --seed 30; grep -c PASS $OUT/ops.log; grep -E "FAIL|error" $OUT/ops.log | head -5
STEP_TIMEOUT=30 TAIL=3 step synth-mid $C synth --out $M/mid.gguf --type q4_k_m --dim 1024 --ff 2816 --vocab 4096 --layers 4
R8=2:24:1:1:2:0:1:8; R4=2:24:1:1:2:0:1:4
STEP_TIMEOUT=40 TAIL=1 step e2e-mid $C e2e --model $M/mid.gguf --tokens 48
STEP_TIMEOUT=40 TAIL=1 step e2e-mid-ring8 env GLIMMER_GEMV_TMA=$R8 $C e2e --model $M/mid.gguf --tokens 48
grep -H "^  decode\|^  prefill\|slot 1" $OUT/e2e-mid*.log | cut -c1-240
STEP_TIMEOUT=60 TAIL=3 step synth-full $C synth --out $M/full.gguf --full
for r in 1 2; do
  for v in def ring8 ring4; do
    case $v in def) E=;; ring8) E=GLIMMER_GEMV_TMA=$R8;; ring4) E=GLIMMER_GEMV_TMA=$R4;; esac
    STEP_TIMEOUT=50 TAIL=0 step bench-$v$r env $E $C bench --model $M/full.gguf --prefill 512 --steps 64 --bw-gib 4 --quick
    grep -E "decode \(graph|(GEMVs|everything but|norms|attention) \(round 1|memcpy" $OUT/bench-$v$r.log | sed 's/PDL.*launches)//' | head -8
  done
done
STEP_TIMEOUT=90 TAIL=0 step timeline-ring8 env GLIMMER_GEMV_TMA=$R8 GLIMMER_CUDA_DEFINES=KT_TRACE=1 $C timeline --model $M/full.gguf --prefill 512
grep -E "sums|memcpy" $OUT/timeline-ring8.log
kill $TP 2>/dev/null; tar czf $R/logs.tgz -C $OUT .; ls $OUT | wc -l

#!/usr/bin/env bash
# On the device machine (see /work/.library/device): session 22's call. The cluster norms with
# one exchange and no block barriers (NORM_CL_FAST=1, the new default; kernels/norm.cu) and
# the Q4_K high nibbles without shifts (K_Q4_HIMASK=1, the new default; kernels/gemv_k.cu),
# each against its session-21 form (the macro at 0) in the same call: every kernel check
# (`cuda-check ops`), e2e on the 4-layer `mid` model, then the 30B-shape decode benches
# alternating, the launch timeline with weight copies (the gaps the norms sit in) and without
# (KT_NOLOAD=1: the items' own chain). Logs are tarred into $OUT/logs.tgz every 30 s.
# Carries a stripped `cuda-check` in devcarry/ (see scripts/cuda-perf.sh).
. scripts/cuda-call-setup.sh
( while sleep 30; do tar czf $R/logs.tgz -C $OUT . 2>/dev/null; done ) &
TP=$!
STEP_TIMEOUT=60 TAIL=3 step ops $C ops --seed 34; grep -c PASS $OUT/ops.log; grep -E "FAIL|error" $OUT/ops.log | head -5
STEP_TIMEOUT=30 TAIL=3 step synth-mid $C synth --out $M/mid.gguf --type q4_k_m --dim 1024 --ff 2816 --vocab 4096 --layers 4
STEP_TIMEOUT=40 TAIL=1 step e2e-mid $C e2e --model $M/mid.gguf --tokens 48
grep -H "^  decode\|slot 1" $OUT/e2e-mid*.log | cut -c1-280
STEP_TIMEOUT=60 TAIL=3 step synth-full $C synth --out $M/full.gguf --full
for r in 1 2; do
  for v in def norm0 hi0; do
    case $v in def) D=;; norm0) D=NORM_CL_FAST=0;; hi0) D=K_Q4_HIMASK=0;; esac
    STEP_TIMEOUT=60 TAIL=0 step bench-$v$r env "GLIMMER_CUDA_DEFINES=$D" $C bench --model $M/full.gguf --prefill 512 --steps 64 --bw-gib 4 --quick
    grep -E "decode \(graph|(GEMVs|everything but) \(round 1|memcpy" $OUT/bench-$v$r.log | sed 's/PDL.*launches)//' | head -6
  done
done
for v in def norm0; do
  case $v in def) D=;; norm0) D=NORM_CL_FAST=0;; esac
  STEP_TIMEOUT=50 TAIL=0 step tl-$v env "GLIMMER_CUDA_DEFINES=KT_TRACE=1 $D" $C timeline --model $M/full.gguf --prefill 512
  echo "== with copies, $v ($D)"; grep -E "sums|^  shape" $OUT/tl-$v.log
done
for v in def hi0; do
  case $v in def) D=;; hi0) D=K_Q4_HIMASK=0;; esac
  STEP_TIMEOUT=50 TAIL=0 step noload-$v env "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1 $D" $C timeline --model $M/full.gguf --prefill 512
  echo "== no copies, $v ($D)"; grep -E "sums|^  shape" $OUT/noload-$v.log
done
kill $TP 2>/dev/null; tar czf $R/logs.tgz -C $OUT .; ls $OUT | wc -l

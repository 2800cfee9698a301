#!/usr/bin/env bash
# On the device machine (see /work/.library/device): session 22's second call. Decode attention
# over thread-block clusters (`attn_split_cl`, kernels/attention.cu; 16 blocks a head, the
# default when this ran, set below since it is off by default now) against clusters of 8 and against `attn_split`'s splits and ticket
# (GLIMMER_ATTN_CLUSTER=0), and the one-exchange cluster norms at 8 blocks
# (GLIMMER_NORM_CLUSTER=8): every kernel check (`cuda-check ops`), e2e on the 4-layer `mid`
# model, the 30B-shape decode benches alternating, then the launch timeline with weight copies
# (the gap before the output projection holds attn_inputs and attention). Logs are tarred into
# $OUT/logs.tgz every 30 s. Carries a stripped `cuda-check` in devcarry/ (see
# scripts/cuda-perf.sh).
. scripts/cuda-call-setup.sh
export GLIMMER_ATTN_CLUSTER=16
logs_start
ops_checks 35
grep -E "^attn_decode" $OUT/ops.log | cut -c1-150
synth_mid
e2e_mid e2e-mid X=1
e2e_mid e2e-mid-a0 GLIMMER_ATTN_CLUSTER=0
e2e_mid_summary
synth_full
for r in 1 2; do
  for v in def a8 a0 n8; do
    case $v in def) E=X=1;; a8) E=GLIMMER_ATTN_CLUSTER=8;; a0) E=GLIMMER_ATTN_CLUSTER=0;; n8) E=GLIMMER_NORM_CLUSTER=8;; esac
    STEP_TIMEOUT=60 TAIL=0 step bench-$v$r env $E $C bench --model $M/full.gguf --prefill 512 --steps 64 --bw-gib 4 --quick
    grep -E "decode \(graph|(GEMVs|attention|everything but) +\(round 1|memcpy" $OUT/bench-$v$r.log | sed 's/PDL.*launches)//' | head -7
  done
done
for v in def a0; do
  case $v in def) E=X=1;; a0) E=GLIMMER_ATTN_CLUSTER=0;; esac
  TL_TIMEOUT=50 timeline tl-$v $E GLIMMER_CUDA_DEFINES=KT_TRACE=1
  echo "== with copies, $v ($E)"; timeline_shapes tl-$v
done
logs_end; ls $OUT | wc -l

#!/usr/bin/env bash
# On the device machine (see /work/.library/device): run-time items for the bulk-copy GEMVs'
# last rounds (`GLIMMER_GEMV_STEAL`, kernels/gemv_k.cu KT_ITEM_OFF; written in session 22 after
# its device time was spent, never yet run). Every kernel check (`cuda-check ops`, whose
# `matmul_many2_steal*` checks take it through both shapes), e2e on the 4-layer `mid` model
# with it, the 30B-shape decode with 0 (the default), 1, 2 and 4 run-time rounds alternating
# (and row-split teams with 0 and 2),
# then the launch timeline with weight copies for 0 and 2 (its "end spread" column is what
# this should shrink: 12 µs for FFN gate/up on the H100 in session 22). Then the attention's
# keys and values asked of L2 by attn_inputs (GLIMMER_CUDA_DEFINES=ATTN_KV_PREFETCH=1,
# kernels/attn_inputs.cu, also never yet run): e2e and two benches. Logs are tarred into
# $OUT/logs.tgz every 30 s. Carries a stripped `cuda-check` in devcarry/.
. scripts/cuda-call-setup.sh
logs_start
ops_checks 38
grep -E "^matmul_many2_steal" $OUT/ops.log | cut -c1-150 | head -8
synth_mid
e2e_mid e2e-mid-st2 GLIMMER_GEMV_STEAL=2
e2e_mid_summary
synth_full
# st<N>: N run-time rounds; rs<N>: the same with row-split teams (GLIMMER_GEMV_TMA=2:24:3:1:2:0:1).
sbench() { # variant, round
  local v=$1 r=$2 T=1
  case $v in rs*) T=2:24:3:1:2:0:1;; esac
  STEP_TIMEOUT=60 TAIL=0 step bench-$v-$r env GLIMMER_GEMV_TMA=$T GLIMMER_GEMV_STEAL=${v#??} $C bench --model $M/full.gguf --prefill 512 --steps 64 --bw-gib 4 --quick
  grep -E "decode \(graph|(GEMVs|everything but) +\(round 1|memcpy" $OUT/bench-$v-$r.log | sed 's/PDL.*launches)//' | head -5
}
for v in st0 st1 st2 st4 rs0 rs2; do sbench $v 1; done
for v in st0 st2 rs2; do sbench $v 2; done
for st in 0 2; do
  TL_TIMEOUT=50 timeline tl-st$st GLIMMER_GEMV_STEAL=$st GLIMMER_CUDA_DEFINES=KT_TRACE=1
  echo "== with copies, GLIMMER_GEMV_STEAL=$st"; timeline_shapes tl-st$st
done
e2e_mid e2e-mid-kvpf GLIMMER_CUDA_DEFINES=ATTN_KV_PREFETCH=1
grep -H "^  decode\|slot 1" $OUT/e2e-mid-kvpf.log | cut -c1-200
for r in 1 2; do
  for v in def kvpf; do
    D=; [ $v = kvpf ] && D=ATTN_KV_PREFETCH=1
    STEP_TIMEOUT=60 TAIL=0 step bench-$v-$r env GLIMMER_CUDA_DEFINES=$D $C bench --model $M/full.gguf --prefill 512 --steps 64 --bw-gib 4 --quick
    grep -E "decode \(graph|(attention|Q/K norm\+RoPE\+KV store) +\(round 1" $OUT/bench-$v-$r.log | sed 's/PDL.*launches)//' | head -4
  done
done
logs_end; ls $OUT | wc -l

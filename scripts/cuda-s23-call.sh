#!/usr/bin/env bash
# On the device machine (see /work/.library/device), session 23's first call: the three knobs
# written in session 22 and never yet run, on whichever card comes. Every kernel check
# (`cuda-check ops --seed 37`: the cluster attention's long-row path, the run-time items'
# `matmul_many2_steal*` checks, the default kernels with their two new arguments), e2e on the
# 4-layer `mid` model with each knob, then the 30B-shape decode alternating the default, the
# cluster attention (GLIMMER_ATTN_CLUSTER=16), run-time items (GLIMMER_GEMV_STEAL=1, 2, 4) and
# the KV prefetch (GLIMMER_CUDA_DEFINES=ATTN_KV_PREFETCH=1) at 512 keys, the cluster attention
# against the default at 3 000 keys (its long-row path), and the launch timelines with copies
# for GLIMMER_GEMV_STEAL 0 and 2 (their "tail idle" and "end spread" columns); on an H200 two
# rows an item and row-split teams replace the KV prefetch at 512 keys. Logs are tarred
# into $OUT/logs.tgz every 30 s. Carries a stripped `cuda-check` in devcarry/.
. scripts/cuda-call-setup.sh
logs_start
ops_checks 37
grep -E "^(attn_.*cluster|matmul_many2_steal)" $OUT/ops.log | grep -v SUMMARY | cut -c1-150 | head -12
synth_mid
e2e_mid e2e-mid X=1
e2e_mid e2e-mid-ac GLIMMER_ATTN_CLUSTER=16
e2e_mid e2e-mid-st2 GLIMMER_GEMV_STEAL=2
e2e_mid e2e-mid-kvpf GLIMMER_CUDA_DEFINES=ATTN_KV_PREFETCH=1
e2e_mid_summary
synth_full
if grep -q H200 $OUT/gpu.txt; then
  # On an H200, two rows an item and row-split teams (their shorter item chain is what the
  # H200's GEMVs were bound by in session 21) take the KV prefetch's and st1/st4's places.
  for r in $(seq ${ROUNDS:-2}); do
    bench def$r 512 X=1
    bench ac$r 512 GLIMMER_ATTN_CLUSTER=16
    bench r2$r 512 GLIMMER_GEMV_TMA=2:24:2:1:2:0:1
    bench rs$r 512 GLIMMER_GEMV_TMA=2:24:3:1:2:0:1
    bench st2$r 512 GLIMMER_GEMV_STEAL=2
  done
else
  bench def 512 X=1
  bench ac 512 GLIMMER_ATTN_CLUSTER=16
  bench st2 512 GLIMMER_GEMV_STEAL=2
  bench kvpf 512 GLIMMER_CUDA_DEFINES=ATTN_KV_PREFETCH=1
  bench st1 512 GLIMMER_GEMV_STEAL=1
  [ "${ROUNDS:-2}" = 1 ] || {
  bench def2 512 X=1
  bench ac2 512 GLIMMER_ATTN_CLUSTER=16
  bench st22 512 GLIMMER_GEMV_STEAL=2
  bench st4 512 GLIMMER_GEMV_STEAL=4
  bench kvpf2 512 GLIMMER_CUDA_DEFINES=ATTN_KV_PREFETCH=1
  }
fi
# SHORT=1 (a call with little device time left) stops here; ROUNDS=1 halves the benches above.
[ -n "${SHORT:-}" ] && { logs_end; exit 0; }
bench def 3000 X=1
bench ac 3000 GLIMMER_ATTN_CLUSTER=16
for st in 0 2; do
  TL_TIMEOUT=50 timeline tl-st$st GLIMMER_GEMV_STEAL=$st GLIMMER_CUDA_DEFINES=KT_TRACE=1
  echo "== with copies, GLIMMER_GEMV_STEAL=$st"; timeline_shapes tl-st$st
done
logs_end; ls $OUT | wc -l

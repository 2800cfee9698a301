#!/usr/bin/env bash
# On the device machine (see /work/.library/device): the checks and timings the next session
# starts from, most wanted first, so that a call cut short at its limit still brings back the
# first rows. Session 24 ran decode's two graphs on an H100 (steps whose rows see at most
# GLIMMER_ATTN_CLUSTER_KEYS keys replay a graph of cluster attention launches, later steps one
# of attn_split launches) and moved the cut from 640 to 1 536 keys after sweeping it. This
# call: every kernel check (`ops`, with the host's routing of long rows, `_keys64` /
# `_cluster_long`, and the in-launch path, `_inlaunch`), e2e on the 4-layer `mid` model by
# default, with the clusters' keys at 24 (its 48 tokens cross into the second graph: "decode
# graphs captured: 2", graph bit-identical to eager) and with the clusters off, then the
# 30B-shape decode, default against GLIMMER_ATTN_CLUSTER=0 at 512 keys (the cluster graph)
# and at 3 000 keys (the attn_split graph: the two should match), and on an H200 two rows an
# item and row-split teams (their shorter item chain is what bound the H200's GEMVs in
# session 21; on the H100 they lose 2.3 %). Logs are tarred into $OUT/logs.tgz every 30 s.
# Carries a stripped `cuda-check` in devcarry/ (see scripts/cuda-perf.sh). SHORT=1 skips
# 3 000 and 1 200 keys (the last: the new cut against the old); ROUNDS=N runs the 512-key
# rows N times (2).
. scripts/cuda-call-setup.sh
logs_start
ops_checks 40
grep -E "^attn_.*(keys64|_long|inlaunch)" $OUT/ops.log | grep -v SUMMARY | cut -c1-150 | head -12
synth_mid
e2e_mid e2e-mid X=1
e2e_mid e2e-mid-k24 GLIMMER_ATTN_CLUSTER_KEYS=24
e2e_mid e2e-mid-ac0 GLIMMER_ATTN_CLUSTER=0
e2e_mid_summary
synth_full
for r in $(seq ${ROUNDS:-2}); do
  bench def$r 512 X=1
  bench ac0$r 512 GLIMMER_ATTN_CLUSTER=0
  if grep -q H200 $OUT/gpu.txt; then
    bench r2$r 512 GLIMMER_GEMV_TMA=2:24:2:1:2:0:1
    bench rs$r 512 GLIMMER_GEMV_TMA=2:24:3:1:2:0:1
  fi
done
[ -n "${SHORT:-}" ] && { logs_end; exit 0; }
bench def 3000 X=1
bench ac0 3000 GLIMMER_ATTN_CLUSTER=0
# The new cut (1 536) at 1 200 keys: clusters (default) against the old cut's attn_split.
bench def 1200 X=1
bench k640 1200 GLIMMER_ATTN_CLUSTER_KEYS=640
logs_end; ls $OUT | wc -l

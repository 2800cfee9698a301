#!/usr/bin/env bash
# On the device machine (see /work/.library/device): the checks and timings the next session
# starts from, most wanted first, so that a call cut short at its limit still brings back the
# first rows. Session 25 ran session 24's call on an H100 (the default, clusters up to 1 536
# keys, 76.4–76.5 %) and made the fused Q/K launch's attention check measure attention alone
# (the CPU attends over the device's Q, K and V; seed 40 had missed the old tolerance). This
# call (both seeds passed on an H100 since, 2 082 checks each) is for an H200 only, and
# stops at once on another card: every kernel check (seed 40), then the 30B-shape decode at
# 512 keys, the default against GLIMMER_ATTN_CLUSTER=0 and against two rows an item and
# row-split teams (written for the H200's item chain, session 21; on the H100 they lose
# 2.3 %), ROUNDS=N times (2), then the launch timeline with and without weight copies.
# Logs are tarred into $OUT/logs.tgz every 30 s. Carries a stripped `cuda-check` in
# devcarry/ (see scripts/cuda-perf.sh). NO_OPS=1 skips the checks (little device time left).
. scripts/cuda-call-setup.sh
grep -q H200 $OUT/gpu.txt || { tar czf $R/logs.tgz -C $OUT .; exit 0; }
logs_start
[ -n "${NO_OPS:-}" ] || ops_checks 40
synth_full
for r in $(seq ${ROUNDS:-2}); do
  bench def$r 512 X=1
  bench r2$r 512 GLIMMER_GEMV_TMA=2:24:2:1:2:0:1
  bench rs$r 512 GLIMMER_GEMV_TMA=2:24:3:1:2:0:1
  bench ac0$r 512 GLIMMER_ATTN_CLUSTER=0
done
# The launch timeline of one eager step at 515 keys, with and without weight copies
# (`KT_NOLOAD=1`: the items' own chain), as session 21 took it on the H200 (shape medians and
# sums: scripts/cuda-item-chain.sh prints them the same way).
for t in def noload; do
  D="KT_TRACE=1"; [ $t = noload ] && D="KT_TRACE=1 KT_NOLOAD=1"
  timeline timeline-$t "GLIMMER_CUDA_DEFINES=$D"
  echo "== $t"; timeline_shapes timeline-$t
done
logs_end; ls $OUT | wc -l

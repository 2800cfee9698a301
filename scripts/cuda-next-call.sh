#!/usr/bin/env bash
# On the device machine (see /work/.library/device): the checks and timings the next session
# starts from, most wanted first, so that a call cut short at its limit still brings back the
# first rows. Session 26 shortened the bulk-copy GEMVs' item chain (the H200's GEMVs are bound
# by it: session 21): the Q4_K pass in 77 instructions where it took 91 (high nibbles masked in
# place into an unsigned-by-signed dp4a, the scale bytes gathered by byte permutes with the
# lane's constants made once a kernel, the pass's addresses stepped; Q6_K 80 where it took 87),
# and no integer division
# by the ring's run-time depth each item. This call compares that binary (devcarry/cuda-check)
# with the one before it (devcarry/cuda-check-base, commit 6b15104) on whatever card comes:
# every kernel check (seed 40) and e2e on the 4-layer `mid` model first, then the 30B-shape
# decode at 512 keys, the two binaries alternating, ROUNDS=N times (2), two rows an item,
# row-split teams and one warp a ring with the new binary (the fewest instructions an item:
# what a chain-bound card may prefer), and the launch timeline
# without weight copies (KT_NOLOAD=1: the items' own chain) of both binaries, then with
# copies. Logs are tarred into $OUT/logs.tgz every 30 s. NO_OPS=1 skips the checks.
. scripts/cuda-call-setup.sh
B=devcarry/cuda-check-base
logs_start
if [ -z "${NO_OPS:-}" ]; then
  ops_checks 40
  synth_mid; e2e_mid e2e-mid; e2e_mid_summary
fi
synth_full
for r in $(seq ${ROUNDS:-2}); do
  C=$B bench base$r 512 X=1
  bench def$r 512 X=1
done
bench r2 512 GLIMMER_GEMV_TMA=2:24:2:1:2:0:1
bench rs 512 GLIMMER_GEMV_TMA=2:24:3:1:2:0:1
bench t1 512 GLIMMER_GEMV_TMA=2:24:1:1:1
# The launch timeline of one eager step at 515 keys without weight copies (the items' own
# chain), as session 21 took it, for both binaries; then the new one with copies, and the
# new one's chain with one warp a ring and with two rows an item.
C=$B timeline timeline-noload-base "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1"
timeline timeline-noload "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1"
timeline timeline-def "GLIMMER_CUDA_DEFINES=KT_TRACE=1"
timeline timeline-noload-t1 "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1" GLIMMER_GEMV_TMA=2:24:1:1:1
timeline timeline-noload-r2 "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1" GLIMMER_GEMV_TMA=2:24:2:1:2:0:1
for t in noload-base noload def noload-t1 noload-r2; do echo "== $t"; timeline_shapes timeline-$t; done
logs_end; ls $OUT | wc -l

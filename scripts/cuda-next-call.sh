#!/usr/bin/env bash
# On the device machine (see /work/.library/device): the checks and timings the next session
# starts from, most wanted first, so that a call cut short at its limit still brings back the
# first rows. Session 26 shortened the bulk-copy GEMVs' item chain (H200: +4.2 %) and made two
# rows an item the default where the memory is fast for the multiprocessors (TmaGemv::for_card:
# the H200, +1.5 % there with the variable set; the host's choice has not run on a GPU). On
# whatever card comes: every kernel check (seed 41) and e2e on the 4-layer `mid` model with the
# card's default (the device line and the bench's launch line show which it took), then the
# 30B-shape decode at 512 keys, the card's default against one row an item (`r1`) and two
# (`r2`) set by the variable, ROUNDS=N times (2), the cluster attention's key depth against
# the old one at 512 and 1 200 keys, two L2 prefetch knobs, and the launch
# timeline of both with weight copies and of `r2` without (the items' own chain). Logs are
# tarred into $OUT/logs.tgz every 30 s. NO_OPS=1 skips the checks. Carries a stripped
# `cuda-check` in devcarry/.
. scripts/cuda-call-setup.sh
R1=GLIMMER_GEMV_TMA=2:24:1:1:2:0:1
R2=GLIMMER_GEMV_TMA=2:24:2:1:2:0:1
logs_start
if [ -z "${NO_OPS:-}" ]; then
  ops_checks 41
  synth_mid; e2e_mid e2e-mid; e2e_mid_summary
fi
synth_full
for r in $(seq ${ROUNDS:-2}); do
  bench def$r 512 X=1
  bench r1$r 512 $R1
  bench r2$r 512 $R2
done
grep -h "^device:" $OUT/bench-def1-512.log
# The cluster attention's key iterations in flight: one (before session 26) against four.
bench akd1 512 GLIMMER_CUDA_DEFINES=ATT_KEY_DEPTH=1
bench akd1k 1200 GLIMMER_CUDA_DEFINES=ATT_KEY_DEPTH=1
bench def 1200 X=1
# Two L2 prefetches that lost on the H100 (sessions 17, 20), where HBM was the limit, once each
# with the card's default: the projection's weights asked for during attention, and each
# GEMV team's share of the next launch's first weights.
bench apf 512 GLIMMER_ATTN_PREFETCH=16
bench nxt 512 GLIMMER_GEMV_NEXT=2048
# On an H200 only: the fusions that lost on the H100 (sessions 19-20: a launch boundary's cost
# against a software grid barrier's or a serial prep's) once each, now that the H200's GEMVs
# are no longer bound by their chain: attn_inputs in the Q/K/V launch, in attention, and the
# grid-barrier norm.
if grep -q H200 $OUT/gpu.txt; then
  bench fqk 512 GLIMMER_FUSE_QK=1
  bench fprep 512 GLIMMER_FUSE_PREP=1
  bench fnorm 512 GLIMMER_FUSE_NORM=3
fi
# The launch timeline of one eager step at 515 keys (session 21's measure), with copies for
# both item sizes, and r2's chain without them.
timeline timeline-r1 "GLIMMER_CUDA_DEFINES=KT_TRACE=1" $R1
timeline timeline-r2 "GLIMMER_CUDA_DEFINES=KT_TRACE=1" $R2
timeline timeline-noload-r2 "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1" $R2
for t in r1 r2 noload-r2; do echo "== $t"; timeline_shapes timeline-$t; done
logs_end; ls $OUT | wc -l

#!/usr/bin/env bash
# On the device machine (see /work/.library/device): the checks and timings the next session
# starts from, most wanted first, so that a call cut short at its limit (the logs are tarred
# into $OUT/logs.tgz every 30 s) still brings back the first rows. Session 28 ran everything
# on H100s only (the tensor-core prefill GEMM passed and became the default; ATT_KEY_DEPTH=4
# lost and 1 is the default again); the H200 has not run session 26's later changes
# (`kt_stage_act`, the host's per-card row choice) nor session 27's two-row fused kernels. On
# whatever card comes (~10 minutes on an H200, the timelines last; NO_OPS=1 skips the checks):
#   every kernel check (seed 41; the tensor-core GEMM at prefill shapes) and e2e on the 4-layer
#   `mid` model with the card's default (the device line and the bench's launch line show which
#   it took) and with the dp4a GEMVs for prefill (GLIMMER_PREFILL_MMA=0);
#   the 30B-shape prefill with the GEMVs beside the default's (the GEMM);
#   the 30B-shape decode at 512 keys: the card's default, two rows an item (`r2`) and one
#   (`r1`) set by the variable, and the key depth of four (ATT_KEY_DEPTH=4), then the default
#   at 1 200 keys (more keys a block);
#   on an H200 the three fusions that lost on the H100 when its GEMVs were bound by their bytes;
#   attention fused before the output projection, and every fusion at once (with its e2e
#   tallies) (the fused bulk-copy kernels keep two rows an item where the card's default has
#   them: session 27's gemv_k_multi_tma2_t2_gridnorm / _qkprep / _attn / _attn_gridnorm);
#   ROUNDS=2 repeats the 512-key rows; last, the launch timeline with and without
#   weight copies (its "staged" column: the staging).
. scripts/cuda-call-setup.sh
R1=GLIMMER_GEMV_TMA=2:24:1:1:2:0:1
R2=GLIMMER_GEMV_TMA=2:24:2:1:2:0:1
logs_start
if [ -z "${NO_OPS:-}" ]; then
  ops_checks 41
  synth_mid; e2e_mid e2e-mid; e2e_mid e2e-mid-gemv GLIMMER_PREFILL_MMA=0; e2e_mid_summary
fi
synth_full
bench def1 512 X=1
grep -h "^device:" $OUT/bench-def1-512.log
# The default's prefill (the tensor-core GEMM) against the dp4a GEMVs'.
bench gemv 512 GLIMMER_PREFILL_MMA=0
grep -h "prefill 512" $OUT/bench-def1-512.log $OUT/bench-gemv-512.log
bench r21 512 $R2
bench akd4 512 GLIMMER_CUDA_DEFINES=ATT_KEY_DEPTH=4
# QUICK=1 (~5 minutes): stop here.
if [ -n "${QUICK:-}" ]; then logs_end; exit 0; fi
bench r11 512 $R1
bench def 1200 X=1
if grep -q H200 $OUT/gpu.txt; then
  bench fqk 512 GLIMMER_FUSE_QK=1
  bench fprep 512 GLIMMER_FUSE_PREP=1
  bench fnorm 512 GLIMMER_FUSE_NORM=3
fi
# Attention in front of the output projection in one launch, then every fusion at once
# (Q/K prep after the Q/K/V matmuls, attention before the projection, the norms after a grid
# barrier: four launches a layer fewer), with its e2e tallies.
bench fattn 512 GLIMMER_FUSE_ATTN=1
bench fall 512 GLIMMER_FUSE_QK=1 GLIMMER_FUSE_ATTN=1 GLIMMER_FUSE_NORM=3
e2e_mid e2e-mid-fall GLIMMER_FUSE_QK=1 GLIMMER_FUSE_ATTN=1 GLIMMER_FUSE_NORM=3
e2e_mid_summary
# Run-time items for the last round of each one-row launch (lost 4-7 % on the H100 in session
# 23, whose GEMVs were bound by their bytes; the H200's blocks end up to 4 us apart).
bench st1 512 $R1 GLIMMER_GEMV_STEAL=1
for r in $(seq 2 ${ROUNDS:-1}); do
  bench def$r 512 X=1
  bench r1$r 512 $R1
  bench r2$r 512 $R2
done
# The launch timeline of one eager step at 515 keys (session 21's measure), the card's default
# with weight copies and without (the items' own chain).
timeline timeline-def "GLIMMER_CUDA_DEFINES=KT_TRACE=1"
timeline timeline-noload "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1"
for t in def noload; do echo "== $t"; timeline_shapes timeline-$t; done
logs_end; ls $OUT | wc -l

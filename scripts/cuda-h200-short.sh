#!/usr/bin/env bash
# On an H200 with little device time left (~5 minutes): session 28's defaults (the tensor-core
# prefill GEMM, ATT_KEY_DEPTH=1) through e2e on the 4-layer `mid` model, then the 30B-shape
# decode at 512 keys: the default, each fusion that lost on the H100 while its GEMVs were bound
# by their bytes (the fused bulk-copy kernels now keep two rows an item), one row an item, the
# key depth of four, and the default again (the spread between the two default rows). On
# another card, the defaults at longer rows and the timeline instead.
. scripts/cuda-call-setup.sh
R1=GLIMMER_GEMV_TMA=2:24:1:1:2:0:1
logs_start
# ONLY_H200=1: on another card, stop at once (its rows already ran this session).
if [ -n "${ONLY_H200:-}" ] && ! grep -q H200 $OUT/gpu.txt; then logs_end; exit 0; fi
[ -z "${MIN:-}" ] && { synth_mid; e2e_mid e2e-mid; e2e_mid_summary; }
synth_full
if ! grep -q H200 $OUT/gpu.txt; then
  # Not an H200 (the kind may lend an H100): the defaults at longer rows (1 200 keys: the
  # cluster attention; 3 000: attn_split) and the launch timeline of one eager step.
  bench def 1200 X=1
  bench def 3000 X=1
  timeline timeline-def "GLIMMER_CUDA_DEFINES=KT_TRACE=1"; timeline_shapes timeline-def
  logs_end; exit 0
fi
bench def1 512 X=1
grep -h "^device:\|prefill 512" $OUT/bench-def1-512.log
bench fqk 512 GLIMMER_FUSE_QK=1
bench fnorm 512 GLIMMER_FUSE_NORM=3
# MIN=1 (~2 minutes of device time left): stop after the default and these two fusions.
if [ -n "${MIN:-}" ]; then logs_end; exit 0; fi
bench fattn 512 GLIMMER_FUSE_ATTN=1
bench fprep 512 GLIMMER_FUSE_PREP=1
bench akd4 512 GLIMMER_CUDA_DEFINES=ATT_KEY_DEPTH=4
bench r11 512 $R1
bench def2 512 X=1
logs_end; ls $OUT | wc -l

#!/usr/bin/env bash
# On the device machine when only an H100 comes: the unrun code's checks first (every kernel
# check with seed 41, the tensor-core prefill GEMM and the two-row fused kernels among them;
# e2e on the 4-layer `mid` model with the default and with the GEMM), then the 30B-shape
# prefill with the GEMM beside the default's, and the decode with the card's default and with
# two rows an item set by the variable (~5 minutes on an H100; timings do not compare with the
# H200's).
. scripts/cuda-call-setup.sh
R2=GLIMMER_GEMV_TMA=2:24:2:1:2:0:1
logs_start
ops_checks 41
synth_mid; e2e_mid e2e-mid; e2e_mid e2e-mid-mma GLIMMER_PREFILL_MMA=1; e2e_mid_summary
synth_full
bench def1 512 X=1
grep -h "^device:" $OUT/bench-def1-512.log
bench mma 512 GLIMMER_PREFILL_MMA=1
grep -h "prefill 512" $OUT/bench-def1-512.log $OUT/bench-mma-512.log
bench r21 512 $R2
bench akd1 512 GLIMMER_CUDA_DEFINES=ATT_KEY_DEPTH=1
logs_end; ls $OUT | wc -l

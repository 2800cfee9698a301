#!/usr/bin/env bash
# Session 29's call: every kernel check (the one-launch argmax and sample_f32 among them), then
# the 30B-shape decode at 512 keys with the binary before the multi-block argmax
# (devcarry/cuda-check-old: argmax_f32 one block of 1 024 threads) and after it, alternated
# twice in the same call. The old binary, built here from commit 87aead7 (the last with the
# one-block argmax):
#   git worktree add /tmp/glimmer-old 87aead7 && (cd /tmp/glimmer-old && CARGO_TARGET_DIR=/work/main/target-old \
#     cargo build --release -p glimmer-jetson --example cuda-check) && \
#     strip -o devcarry/cuda-check-old target-old/release/examples/cuda-check
# On an H200 also the rows of cuda-h200-short.sh (each fusion with the H200's two-row items,
# one row an item, the default again). e2e on `mid` first.
. scripts/cuda-call-setup.sh
logs_start
ops_checks 43
# e2e on `mid`: greedy decode through the new argmax, checked against the host's argmax of the
# same logits at every step.
synth_mid; e2e_mid e2e-mid; e2e_mid_summary; grep -h "differs from host" $OUT/e2e-mid.log | head -3
synth_full
C0=devcarry/cuda-check-old C1=devcarry/cuda-check
chmod +x $C0
# ROUNDS=1 with little device time left.
for r in $(seq 1 ${ROUNDS:-2}); do
  C=$C0 bench old$r 512 X=1
  C=$C1 bench new$r 512 X=1
done
grep -h "default launches" $OUT/bench-old1-512.log $OUT/bench-new1-512.log
if grep -q H200 $OUT/gpu.txt; then
  C=$C1
  bench fqk 512 GLIMMER_FUSE_QK=1
  bench fnorm 512 GLIMMER_FUSE_NORM=3
  bench fattn 512 GLIMMER_FUSE_ATTN=1
  bench fprep 512 GLIMMER_FUSE_PREP=1
  bench r11 512 GLIMMER_GEMV_TMA=2:24:1:1:2:0:1
  bench new3 512 X=1
fi
logs_end; ls $OUT | wc -l

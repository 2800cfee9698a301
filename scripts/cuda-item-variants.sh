#!/usr/bin/env bash
# On the device machine: the items' own chain (KT_NOLOAD=1, no weight copies; see
# scripts/cuda-item-chain.sh) under other bulk-copy shapes: two rows an item with teams of two
# (`2:24:2:1:2:0:1`), one warp a ring (`2:24:1:1:1`), teams of four everywhere (`2:24:1:1:4`),
# against the default. Where HBM outruns the kernels' arithmetic (the H200) this chain, not the
# bytes, bounds a launch. Logs in $OUT/logs.tgz.
. scripts/cuda-call-setup.sh
[ -f $M/full.gguf ] || STEP_TIMEOUT=60 TAIL=1 step synth-full $C synth --out $M/full.gguf --full
for v in def r2 t1 t4; do
  case $v in def) T=1;; r2) T=2:24:2:1:2:0:1;; t1) T=2:24:1:1:1;; t4) T=2:24:1:1:4;; esac
  TL_TIMEOUT=50 timeline noload-$v GLIMMER_GEMV_TMA=$T "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1"
  echo "== $v ($T)"; timeline_shapes noload-$v
done
tar czf $R/logs.tgz -C $OUT .

#!/usr/bin/env bash
# On the device machine: the items' chain alone (KT_NOLOAD=1 timeline, scripts/cuda-item-chain.sh)
# with kt_item's passes unrolled by two (KT_ITEM_UNROLL=2) against the default, then the
# 30B-shape decode of the default, of the unrolled passes and of two rows an item
# (`GLIMMER_GEMV_TMA=2:24:2:1:2:0:1`). Logs in $OUT/logs.tgz.
. scripts/cuda-call-setup.sh
[ -f $M/full.gguf ] || STEP_TIMEOUT=60 TAIL=1 step synth-full $C synth --out $M/full.gguf --full
for v in def u2; do
  case $v in def) D=;; u2) D=KT_ITEM_UNROLL=2;; esac
  TL_TIMEOUT=50 timeline noload-$v "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1 $D"
  echo "== $v"; timeline_shapes noload-$v
done
for v in def u2 r2; do
  case $v in def) E=;; u2) E=GLIMMER_CUDA_DEFINES=KT_ITEM_UNROLL=2;; r2) E=GLIMMER_GEMV_TMA=2:24:2:1:2:0:1;; esac
  STEP_TIMEOUT=50 TAIL=0 step bench-$v env $E $C bench --model $M/full.gguf --prefill 512 --steps 64 --bw-gib 4 --quick
  grep -E "decode \(graph|GEMVs \(round 1|memcpy" $OUT/bench-$v.log | sed 's/PDL.*launches)//' | head -4
done
tar czf $R/logs.tgz -C $OUT .

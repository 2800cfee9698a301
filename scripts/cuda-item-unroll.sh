#!/usr/bin/env bash
# On the device machine: the items' chain alone (KT_NOLOAD=1 timeline, scripts/cuda-item-chain.sh)
# with kt_item's passes unrolled by two (KT_ITEM_UNROLL=2) against the default, then the
# 30B-shape decode of the default, of the unrolled passes and of two rows an item
# (`GLIMMER_GEMV_TMA=2:24:2:1:2:0:1`). Logs in $OUT/logs.tgz.
R=$OUT; OUT=/tmp/glimmer-logs; mkdir -p $OUT; export OUT
M=/tmp/glimmer-models; export GLIMMER_CUDA_CACHE=$M/kernel-cache; mkdir -p $M
chmod +x devcarry/*; . scripts/cuda-libs.sh
C=devcarry/cuda-check
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
[ -f $M/full.gguf ] || STEP_TIMEOUT=60 TAIL=1 step synth-full $C synth --out $M/full.gguf --full
for v in def u2; do
  case $v in def) D=;; u2) D=KT_ITEM_UNROLL=2;; esac
  STEP_TIMEOUT=50 TAIL=0 step noload-$v env "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1 $D" $C timeline --model $M/full.gguf --prefill 512
  echo "== $v"; grep -E "sums" $OUT/noload-$v.log
  for k in 0 1 2 3; do
    med() { awk -v k=$k -v c=$1 '/^ +[0-9]+ tma/ && $1 < 208 && $1 % 4 == k { print $c }' $OUT/noload-$v.log | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
    echo "  kind $k (0 qkv, 1 proj, 2 gate/up, 3 down): span $(med 5)  items $(med 11)"
  done
done
for v in def u2 r2; do
  case $v in def) E=;; u2) E=GLIMMER_CUDA_DEFINES=KT_ITEM_UNROLL=2;; r2) E=GLIMMER_GEMV_TMA=2:24:2:1:2:0:1;; esac
  STEP_TIMEOUT=50 TAIL=0 step bench-$v env $E $C bench --model $M/full.gguf --prefill 512 --steps 64 --bw-gib 4 --quick
  grep -E "decode \(graph|GEMVs \(round 1|memcpy" $OUT/bench-$v.log | sed 's/PDL.*launches)//' | head -4
done
tar czf $R/logs.tgz -C $OUT .

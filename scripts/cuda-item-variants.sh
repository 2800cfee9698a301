#!/usr/bin/env bash
# On the device machine: the items' own chain (KT_NOLOAD=1, no weight copies; see
# scripts/cuda-item-chain.sh) under other bulk-copy shapes: two rows an item with teams of two
# (`2:24:2:1:2:0:1`), one warp a ring (`2:24:1:1:1`), teams of four everywhere (`2:24:1:1:4`),
# against the default. Where HBM outruns the kernels' arithmetic (the H200) this chain, not the
# bytes, bounds a launch. Logs in $OUT/logs.tgz.
R=$OUT; OUT=/tmp/glimmer-logs; mkdir -p $OUT; export OUT
M=/tmp/glimmer-models; export GLIMMER_CUDA_CACHE=$M/kernel-cache; mkdir -p $M
chmod +x devcarry/*; . scripts/cuda-libs.sh
C=devcarry/cuda-check
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
[ -f $M/full.gguf ] || STEP_TIMEOUT=60 TAIL=1 step synth-full $C synth --out $M/full.gguf --full
for v in def r2 t1 t4; do
  case $v in def) T=1;; r2) T=2:24:2:1:2:0:1;; t1) T=2:24:1:1:1;; t4) T=2:24:1:1:4;; esac
  STEP_TIMEOUT=50 TAIL=0 step noload-$v env GLIMMER_GEMV_TMA=$T "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1" $C timeline --model $M/full.gguf --prefill 512
  echo "== $v ($T)"; grep -E "sums" $OUT/noload-$v.log
  for k in 0 1 2 3; do
    med() { awk -v k=$k -v c=$1 '/^ +[0-9]+ tma/ && $1 < 208 && $1 % 4 == k { print $c }' $OUT/noload-$v.log | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
    echo "  kind $k (0 qkv, 1 proj, 2 gate/up, 3 down): span $(med 5)  items $(med 11)  kernel $(awk -v k=$k '/^ +[0-9]+ tma/ && $1 % 4 == k { print $2 " " $4; exit }' $OUT/noload-$v.log)"
  done
done
tar czf $R/logs.tgz -C $OUT .

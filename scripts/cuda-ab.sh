#!/usr/bin/env bash
# On the device machine (see /work/.library/device): a follow-up call on a warm machine after
# scripts/cuda-next-call.sh, to time settings against each other in one process sequence.
# Each argument is NAME=VAR=VALUE[,VAR=VALUE...] (`def=X=1` for the defaults); every one is
# benched at 512 keys (`bench` of scripts/cuda-call-setup.sh), ROUNDS times (default 2), the
# rounds alternating, so drift lands on all of them alike. The synthetic 30B-shape model is
# written only where the machine no longer holds it. Logs: $OUT/logs.tgz.
#   bash scripts/cuda-ab.sh def=X=1 r2=GLIMMER_GEMV_TMA=2:24:2:1:2:0:1 fn=GLIMMER_FUSE_NORM=3
. scripts/cuda-call-setup.sh
logs_start
[ -s $M/full.gguf ] || synth_full
for r in $(seq 1 ${ROUNDS:-2}); do
  for a in "$@"; do
    name=${a%%=*}; vars=${a#*=}
    bench $name$r ${PREFILL:-512} ${vars//,/ }
  done
done
logs_end

#!/usr/bin/env bash
# On the device machine (see /work/.library/device): the 30B-shape decode figure of the
# default settings, for the issue's table: the synthetic full-scale model, two `--quick`
# benches (graph decode twice each) and one full bench (per-matrix GEMV table, per-op costs).
# Carries a stripped `cuda-check` in devcarry/ (see scripts/cuda-perf.sh). Logs are tarred into
# $OUT/logs.tgz.
. scripts/cuda-call-setup.sh
STEP_TIMEOUT=60 TAIL=1 step synth-full $C synth --out $M/full.gguf --full
for r in 1 2; do
  STEP_TIMEOUT=50 TAIL=0 step bench-def$r $C bench --model $M/full.gguf --prefill 512 --steps 64 --bw-gib 4 --quick
  grep -E "decode \(graph|(GEMVs|everything but) \(round 1|memcpy" $OUT/bench-def$r.log | sed 's/PDL.*launches)//'
done
STEP_TIMEOUT=150 TAIL=0 step bench-full $C bench --model $M/full.gguf --prefill 512 --steps 64 --bw-gib 4
grep -E "decode \(graph|SUMMARY\|cost" $OUT/bench-full.log | sed 's/PDL.*launches)//' | head -12
tar czf $R/logs.tgz -C $OUT .

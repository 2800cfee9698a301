#!/usr/bin/env bash
# On the device machine (see /work/.library/device): the checks and timings the next session
# starts from, most wanted first, so that a call cut short at its limit still brings back the
# first rows. For the first H200 that comes (on an H100 it goes on from session 22): every
# kernel check (`cuda-check ops`: session 22's long-row path of the cluster attention, written
# after the device time ran out, is checked there for the first time), e2e on the 4-layer
# `mid` model with and without the cluster attention, then the 30B-shape decode for the
# default, the cluster attention (`GLIMMER_ATTN_CLUSTER=16`: at 515 keys it merges in the
# cluster, at 3 000 its long-row path must match the default), two rows an item
# (`GLIMMER_GEMV_TMA=2:24:2:1:2:0:1`) and a row a warp of each team of two (`2:24:3:1:2:0:1`;
# both shorten the items' chain, which binds the H200's GEMVs and not the H100's), and the
# launch timelines without weight copies (KT_NOLOAD=1, the items' own chain; BENCHMARKS.md
# session 21 says why). Logs are tarred into $OUT/logs.tgz every 30 s (a call returns at most
# eight files). Carries a stripped `cuda-check` in devcarry/ (see scripts/cuda-perf.sh).
. scripts/cuda-call-setup.sh
( while sleep 30; do tar czf $R/logs.tgz -C $OUT . 2>/dev/null; done ) &
TP=$!
STEP_TIMEOUT=60 TAIL=3 step ops $C ops --seed 37; grep -c PASS $OUT/ops.log; grep -E "FAIL|error" $OUT/ops.log | head -5
grep -E "^attn_.*cluster" $OUT/ops.log | grep -v SUMMARY | cut -c1-150 | head -12
STEP_TIMEOUT=30 TAIL=3 step synth-mid $C synth --out $M/mid.gguf --type q4_k_m --dim 1024 --ff 2816 --vocab 4096 --layers 4
STEP_TIMEOUT=40 TAIL=1 step e2e-mid $C e2e --model $M/mid.gguf --tokens 48
STEP_TIMEOUT=40 TAIL=1 step e2e-mid-ac env GLIMMER_ATTN_CLUSTER=16 $C e2e --model $M/mid.gguf --tokens 48
grep -H "^  decode\|slot 1" $OUT/e2e-mid*.log | cut -c1-300
STEP_TIMEOUT=60 TAIL=3 step synth-full $C synth --out $M/full.gguf --full
bench() { # name, prefill, environment...
  local v=$1 pf=$2; shift 2
  STEP_TIMEOUT=100 TAIL=0 step bench-$v-$pf env "$@" $C bench --model $M/full.gguf --prefill $pf --steps 64 --bw-gib 4 --quick
  grep -E "decode \(graph|(GEMVs|attention|everything but) +\(round 1|memcpy" $OUT/bench-$v-$pf.log | sed 's/PDL.*launches)//' | head -6
}
bench def 512 X=1
bench ac 512 GLIMMER_ATTN_CLUSTER=16
bench r2 512 GLIMMER_GEMV_TMA=2:24:2:1:2:0:1
bench rs 512 GLIMMER_GEMV_TMA=2:24:3:1:2:0:1
bench def2 512 X=1
bench ac2 512 GLIMMER_ATTN_CLUSTER=16
bench def 3000 X=1
bench ac 3000 GLIMMER_ATTN_CLUSTER=16
for v in def r2 rs; do
  case $v in def) T=1;; r2) T=2:24:2:1:2:0:1;; rs) T=2:24:3:1:2:0:1;; esac
  STEP_TIMEOUT=50 TAIL=0 step noload-$v env GLIMMER_GEMV_TMA=$T "GLIMMER_CUDA_DEFINES=KT_TRACE=1 KT_NOLOAD=1" $C timeline --model $M/full.gguf --prefill 512
  echo "== no copies, $v ($T)"; grep -E "sums|^  shape" $OUT/noload-$v.log
done
kill $TP 2>/dev/null; tar czf $R/logs.tgz -C $OUT .; ls $OUT | wc -l

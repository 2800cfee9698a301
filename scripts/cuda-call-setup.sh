# Sourced first by the scripts a device call runs (scripts/cuda-next-call.sh and its kind):
# logs go to /tmp/glimmer-logs ($OUT; the call's own $OUT, where they are tarred at the end,
# becomes $R), models and the kernel cache to /tmp/glimmer-models ($M), the carried
# `cuda-check` is $C; sources scripts/cuda-libs.sh (libraries, `step`) and records the GPU.
R=$OUT; OUT=/tmp/glimmer-logs; mkdir -p $OUT; export OUT
M=/tmp/glimmer-models; export GLIMMER_CUDA_CACHE=$M/kernel-cache; mkdir -p $M
chmod +x devcarry/*; . scripts/cuda-libs.sh
C=devcarry/cuda-check
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
# The 30B-shape decode bench as the calls run it (after `synth --full` into $M/full.gguf),
# into $OUT/bench-NAME-PREFILL.log, its figures echoed: bench NAME PREFILL [VAR=VALUE ...].
bench() { # name, prefill, environment...
  local v=$1 pf=$2; shift 2
  STEP_TIMEOUT=110 TAIL=0 step bench-$v-$pf env "$@" $C bench --model $M/full.gguf --prefill $pf --steps 64 --bw-gib 4 --quick
  grep -E "decode \(graph|(GEMVs|attention|everything but) +\(round 1|memcpy" $OUT/bench-$v-$pf.log | grep -v "default launches" | sed 's/PDL.*launches)//' | head -6
}
# The logs so far into $R/logs.tgz every 30 s, so that a call cut at its limit still brings
# them back (`logs_start`), and once more at the end, the background tarring stopped
# (`logs_end`; a call must run it, or the loop outlives the script).
logs_start() { ( while sleep 30; do tar czf $R/logs.tgz -C $OUT . 2>/dev/null; done ) & TP=$!; }
logs_end() { kill $TP 2>/dev/null; tar czf $R/logs.tgz -C $OUT .; }
# The calls' usual steps: every kernel check with a seed, its counts echoed (`ops_checks
# SEED`); the 4-layer `mid` model written (`synth_mid`); e2e on it, 48 tokens, into
# $OUT/e2e-NAME.log (`e2e_mid NAME [VAR=VALUE ...]`), and the decode lines of every such log
# (`e2e_mid_summary`); the 30B-shape model written into $M/full.gguf (`synth_full`).
ops_checks() {
  STEP_TIMEOUT=60 TAIL=3 step ops $C ops --seed $1
  grep -c PASS $OUT/ops.log; grep -E "FAIL|error" $OUT/ops.log | head -5
}
synth_mid() {
  STEP_TIMEOUT=30 TAIL=3 step synth-mid $C synth --out $M/mid.gguf --type q4_k_m --dim 1024 --ff 2816 --vocab 4096 --layers 4
}
e2e_mid() { # name, environment...
  local v=$1; shift
  STEP_TIMEOUT=40 TAIL=1 step $v env "$@" $C e2e --model $M/mid.gguf --tokens 48
}
e2e_mid_summary() { grep -H "^  decode\|slot 1" $OUT/e2e-mid*.log | cut -c1-320; }
synth_full() { STEP_TIMEOUT=60 TAIL=3 step synth-full $C synth --out $M/full.gguf --full; }
# The launch timeline of one eager step of the 30B shape at 515 keys (after `synth_full`) into
# $OUT/NAME.log (`timeline NAME [VAR=VALUE ...]`; TL_TIMEOUT, the step's limit in seconds, 60
# unless set), and its per-shape medians and sums (`timeline_shapes NAME`).
timeline() { # name, environment...
  local v=$1; shift
  STEP_TIMEOUT=${TL_TIMEOUT:-60} TAIL=0 step $v env "$@" $C timeline --model $M/full.gguf --prefill 512
}
timeline_shapes() { grep -E "sums|^  shape" $OUT/$1.log; }

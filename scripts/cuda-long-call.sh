#!/usr/bin/env bash
# On the device machine (see /work/.library/device): session 22's third call. Every kernel
# check (`cuda-check ops`, after the fix to the prep kernel's bitwise check, which must compare
# against attn_split, not the cluster attention), e2e on the 4-layer `mid` model, then the
# 30B-shape decode with the cluster attention (16 blocks a head, the default when this ran, set
# below since it is off by default now) and without (GLIMMER_ATTN_CLUSTER=0)
# at 512 keys and at 3 000 (ctx 4 096: the sliding layers see 2 048 keys, the global ones
# ~3 000, where 16 splits a head take ~190 keys each against attn_split's 33 of ~90). Logs are
# tarred into $OUT/logs.tgz every 30 s. Carries a stripped `cuda-check` in devcarry/.
. scripts/cuda-call-setup.sh
export GLIMMER_ATTN_CLUSTER=16
logs_start
ops_checks 36
grep -E "^attn_prep.*bitwise" $OUT/ops.log
synth_mid
e2e_mid e2e-mid X=1
e2e_mid_summary
synth_full
for pf in 512 3000; do
  for v in def a0; do
    case $v in def) E=X=1;; a0) E=GLIMMER_ATTN_CLUSTER=0;; esac
    STEP_TIMEOUT=100 TAIL=0 step bench-$v-$pf env $E $C bench --model $M/full.gguf --prefill $pf --steps 64 --bw-gib 4 --quick
    grep -E "prefill|decode \(graph|(GEMVs|attention|everything but) +\(round 1|memcpy" $OUT/bench-$v-$pf.log | sed 's/PDL.*launches)//' | head -8
  done
done
logs_end; ls $OUT | wc -l

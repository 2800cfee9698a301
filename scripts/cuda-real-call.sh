#!/usr/bin/env bash
# The two real models on the device machine, in a call of their own once their pieces are
# there: the GGUF files do not fit one call's 64 MiB, so earlier calls on the same warm machine
# carry them in pieces (split here with `split -b 49300000 -d -a 2 FILE smol.` and
# `split -b 50700000 -d -a 2 FILE gemma.`, one piece a folder `devpN/`, named in `carry`) and
# stash them with `STASH=1 bash scripts/cuda-real-call.sh` (`OPS=SEED` also runs `cuda-check
# ops`). The run proper (no STASH) joins them, checks each file's SHA-256 against the one
# fetch-models.sh pins, then runs `cuda-check e2e` (CUDA against the CPU backend, top-1 at every
# position; graph decode with the token drawn on the device) over every golden fixture prompt
# of both models with the current defaults (the tensor-core prefill GEMM on cc >= 8.0), and
# `cuda-check bench --quick` on each: prefill 512, decode with and without the graph, and the
# ways of taking the token (greedy, a draw on the device, the logits read back). Logs into
# $R/logs.tgz (scripts/cuda-call-setup.sh).
. scripts/cuda-call-setup.sh
mkdir -p $M/pieces
if [ -n "${STASH:-}" ]; then
  for d in devp*/; do [ -d "$d" ] && cp "$d"* $M/pieces/; done
  ls -la $M/pieces; du -sh $M/pieces
  # OPS=SEED: every kernel check too, while the machine is held for the pieces anyway.
  [ -n "${OPS:-}" ] && ops_checks $OPS
  logs_end; exit 0
fi
logs_start
declare -A SHA=(
  [smol]=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
  [gemma]=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
)
for m in smol:smollm2 gemma:gemma3; do
  piece=${m%%:*}; fixture=${m##*:}
  ls $M/pieces/$piece.* >/dev/null 2>&1 || { echo "no pieces of $piece" | tee -a $OUT/run.log; continue; }
  cat $M/pieces/$piece.* > $M/$piece.gguf
  got=$(sha256sum $M/$piece.gguf | cut -d' ' -f1)
  if [ "$got" != "${SHA[$piece]}" ]; then
    echo "$piece: SHA-256 $got, expected ${SHA[$piece]} (a piece is missing?)" | tee -a $OUT/run.log
    continue
  fi
  echo "$piece: SHA-256 ok" | tee -a $OUT/run.log
  python3 - "$fixture" "$M" <<'PY'
import json, sys
name, out = sys.argv[1], sys.argv[2]
d = json.load(open(f"tests/fixtures/golden/{name}.json"))
for i, p in enumerate(d["prompts"]):
    open(f"{out}/ids-{name}-{i}.txt", "w").write(" ".join(map(str, p["tokens"])))
PY
  for f in $M/ids-$fixture-*.txt; do
    i=$(basename "$f" .txt)
    CUDA_CHECK_IDS=$f STEP_TIMEOUT=60 TAIL=0 step "e2e-$i" $C e2e --model $M/$piece.gguf
    grep -h "^SUMMARY|" $OUT/e2e-$i.log | head -5
  done
  STEP_TIMEOUT=90 TAIL=0 step bench-$piece $C bench --model $M/$piece.gguf --prefill 512 --steps 128 --bw-gib 4 --quick
  grep -E "prefill|decode \(|memcpy|bytes per" $OUT/bench-$piece.log | sed 's/PDL.*launches)//'
done
logs_end; ls $OUT | wc -l

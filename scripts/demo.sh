#!/usr/bin/env bash
# The main job: glimmerd serving the default model (SmolLM2 135M) on the simulated board,
# and one agentic session through glimmerctl. The model reads the cabinet temperature with
# the board's TMP102 tool, then switches the fan relay on; glimmerctl prints every tool call
# and its result as it happens. Fetches the models first when they are missing.
#
#   scripts/demo.sh [MESSAGE...]      one message per argument, sent in order in one session
#
# Environment: GLIMMER_MODELS (models dir), GLIMMER_SOCKET (default: a private temp dir),
# GLIMMER_THREADS (engine threads, default: all cores).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/fetch-models.sh
echo "== building glimmerd and glimmerctl" >&2
cargo build --release -q -p glimmer-boards --bin glimmerd --bin glimmerctl

dir=$(mktemp -d)
sock=${GLIMMER_SOCKET:-$dir/run/glimmerd.sock}
threads=${GLIMMER_THREADS:-$(nproc)}
target/release/glimmerd --board sim --socket "$sock" --threads "$threads" --sessions 2 \
    >"$dir/glimmerd.log" 2>&1 &
daemon=$!
trap 'kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; rm -rf "$dir"' EXIT

echo "== waiting for glimmerd on $sock" >&2
for _ in $(seq 1 300); do
    [ -S "$sock" ] && break
    kill -0 "$daemon" 2>/dev/null || { cat "$dir/glimmerd.log" >&2; exit 1; }
    sleep 0.1
done
[ -S "$sock" ] || { echo "glimmerd did not start; its log:" >&2; cat "$dir/glimmerd.log" >&2; exit 1; }

if [ $# -eq 0 ]; then
    set -- "Read the cabinet temperature." "Switch the fan on."
fi
echo "== one session, tools read_temperature and set_fan, each reply starts with a tool call" >&2
printf '%s\n' "$@" | target/release/glimmerctl --socket "$sock" chat \
    --tools read_temperature,set_fan --tool-choice required -n 48
echo "== board status after the session" >&2
target/release/glimmerctl --socket "$sock" invoke get_status

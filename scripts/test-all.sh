#!/usr/bin/env bash
# The Glimmer test command: formatting, lints, the no_std build of the core, cross
# checks for the aarch64 targets, and the whole test suite. It needs the models from
# scripts/fetch-models.sh for the golden tests (those skip, with a message, without them).
# It never uses the reference venv: the golden fixtures are committed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n=== %s ===\n' "$*" >&2; }

step "cargo fmt --all --check"
cargo fmt --all --check

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo build -p glimmer-core --target thumbv7em-none-eabihf"
cargo build -p glimmer-core --target thumbv7em-none-eabihf

# Both aarch64 targets in one command: they share the host's build scripts and proc macros,
# and their crates check in parallel.
step "cargo check --workspace --target aarch64-unknown-linux-gnu --target aarch64-apple-darwin"
cargo check --workspace --target aarch64-unknown-linux-gnu --target aarch64-apple-darwin

step "cargo test --workspace --profile ci"
cargo test --workspace --profile ci

step "all checks passed"

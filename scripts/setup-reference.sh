#!/usr/bin/env bash
# Create (or reuse) the reference Python environment used to regenerate the golden
# fixtures under tests/fixtures/golden/ with llama.cpp (through llama-cpp-python).
# CI does not use it: the fixtures are committed.
#
#   GLIMMER_REFVENV   venv directory (default: ~/.cache/glimmer/refvenv)
#   PYTHON            interpreter that creates the venv (default: python3)
#   LLAMA_CPP_PYTHON_VERSION   pinned version (default: 0.3.36, the one the fixtures record)
#
# llama.cpp is built from source without -march=native: a native build uses AMX
# tile instructions that fault on some hosts, so the ISA is spelled out instead
# (AVX2/FMA/F16C/AVX-512/VNNI: an x86-64 host without AVX-512 needs CMAKE_ARGS edited).
# Idempotent: if the venv already imports llama_cpp, nothing is done.
set -euo pipefail

VENV="${GLIMMER_REFVENV:-$HOME/.cache/glimmer/refvenv}"
PYTHON="${PYTHON:-python3}"
LCP_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"

log() { printf 'setup-reference: %s\n' "$*" >&2; }
die() {
    printf 'setup-reference: error: %s\n' "$*" >&2
    exit 1
}

if [[ -x "$VENV/bin/python" ]] &&
    "$VENV/bin/python" -c 'import llama_cpp, gguf, numpy' >/dev/null 2>&1; then
    log "reference venv ready: $VENV (llama-cpp-python $("$VENV/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)'))"
    exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    log "creating venv $VENV"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV" || die "could not create venv with $PYTHON"
fi

export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF"
export PIP_DISABLE_PIP_VERSION_CHECK=1
log "installing llama-cpp-python (builds llama.cpp from source; this takes a while), gguf, numpy"
log "CMAKE_ARGS=$CMAKE_ARGS"
"$VENV/bin/python" -m pip install --no-input --no-binary llama-cpp-python \
    "llama-cpp-python==$LCP_VERSION" gguf numpy || die "pip install into $VENV failed"

"$VENV/bin/python" -c 'import llama_cpp, gguf, numpy' ||
    die "the venv was built but does not import llama_cpp/gguf/numpy"
log "reference venv ready: $VENV (llama-cpp-python $("$VENV/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)'))"

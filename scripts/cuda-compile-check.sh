#!/usr/bin/env bash
# Compiles kernels/*.cu on a machine without a GPU, as the CUDA backend does at start (one
# NVRTC program, compute_90, the order of jetson/src/compile.rs), then assembles the PTX with
# ptxas for sm_90 and prints each kernel's registers, and any stack frame or spills.
#
# NVRTC and ptxas come from the pip wheels nvidia-cuda-nvrtc-cu12 and nvidia-cuda-nvcc-cu12,
# downloaded once into $CUDA_TOOLS (default ~/.cache/glimmer/cuda-tools). The device's driver
# compiles the PTX itself (CUDA 13 there), so register counts can differ a little; they matched
# on the kernels compared in session 7.
#
#   scripts/cuda-compile-check.sh [ARCH]     ARCH: compute capability digits, default 90
#   GLIMMER_CUDA_DEFINES="NAME=V ..."        kernel tuning macros, as the backend reads them
#   KEEP_PTX=FILE                            keep the PTX
#   SASS=FILE                                write the disassembly of every kernel (cuobjdump
#                                            and nvdisasm from the wheels nvidia-cuda-cuobjdump
#                                            and nvidia-cuda-nvdisasm, fetched once)
set -euo pipefail
ARCH=${1:-90}
TOOLS=${CUDA_TOOLS:-$HOME/.cache/glimmer/cuda-tools}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$TOOLS"
fetch() { # wheel name, path inside it that must exist afterwards
  [ -e "$TOOLS/x/$2" ] && return 0
  echo "fetching $1 (once) into $TOOLS" >&2
  python3 -m pip download --no-deps --quiet -d "$TOOLS/wheels" "$1"
  for w in "$TOOLS"/wheels/"${1//-/_}"-*.whl; do python3 -m zipfile -e "$w" "$TOOLS/x"; done
}
fetch nvidia-cuda-nvrtc-cu12 nvidia/cuda_nvrtc/lib/libnvrtc.so.12
fetch nvidia-cuda-nvcc-cu12 nvidia/cuda_nvcc/bin/ptxas
chmod +x "$TOOLS/x/nvidia/cuda_nvcc/bin/ptxas"
work=$(mktemp -d)
trap '[ -n "${KEEP_PTX:-}" ] && cp "$work/all.ptx" "$KEEP_PTX"; rm -rf "$work"' EXIT
# The sources in the order compile.rs lists them.
for f in $(grep -o '"[a-z_0-9]*\.cu"' "$ROOT/jetson/src/compile.rs" | tr -d '"' | awk '!seen[$0]++'); do
  [ -f "$ROOT/kernels/$f" ] || continue
  printf '#line 1 "%s"\n' "$f" >> "$work/all.cu"
  cat "$ROOT/kernels/$f" >> "$work/all.cu"
  echo >> "$work/all.cu"
done
LD_LIBRARY_PATH="$TOOLS/x/nvidia/cuda_nvrtc/lib" python3 - "$work/all.cu" "$work/all.ptx" "$ARCH" <<'PY'
import ctypes, glob, os, re, sys
lib = ctypes.CDLL(glob.glob(os.path.join(os.environ["LD_LIBRARY_PATH"], "libnvrtc.so.12"))[0])
src, out, arch = sys.argv[1], sys.argv[2], sys.argv[3]
prog = ctypes.c_void_p()
if lib.nvrtcCreateProgram(ctypes.byref(prog), open(src, "rb").read(), b"glimmer.cu", 0, None, None):
    sys.exit("nvrtcCreateProgram failed")
opts = [f"--gpu-architecture=compute_{arch}".encode(), b"--std=c++17"]
# Separated by whitespace or commas, as jetson/src/compile.rs reads the variable.
opts += [f"-D{d}".encode() for d in re.split(r"[\s,]+", os.environ.get("GLIMMER_CUDA_DEFINES", "")) if d]
rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
n = ctypes.c_size_t()
lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
log = ctypes.create_string_buffer(n.value)
lib.nvrtcGetProgramLog(prog, log)
if log.value.strip():
    print(log.value.decode(), file=sys.stderr)
if rc:
    sys.exit(f"NVRTC failed ({rc})")
lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
ptx = ctypes.create_string_buffer(n.value)
lib.nvrtcGetPTX(prog, ptx)
open(out, "wb").write(ptx.value)
PY
"$TOOLS/x/nvidia/cuda_nvcc/bin/ptxas" -arch="sm_$ARCH" -v "$work/all.ptx" -o "$work/all.cubin" 2>&1 |
  awk '/Compiling entry function/ { f = $0; sub(/.*function ./, "", f); sub(/. for .*/, "", f) }
       /Used [0-9]+ registers/ { r = $0; sub(/.*Used /, "", r); print f ": " r }
       /bytes stack frame/ && !/[^0-9]0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads/ {
         s = $0; sub(/^[^0-9]*/, "", s); print f ": " s }' | sort
if [ -n "${SASS:-}" ]; then
  fetch nvidia-cuda-cuobjdump nvidia/cu13/bin/cuobjdump
  fetch nvidia-cuda-nvdisasm nvidia/cu13/bin/nvdisasm
  chmod +x "$TOOLS/x/nvidia/cu13/bin/cuobjdump" "$TOOLS/x/nvidia/cu13/bin/nvdisasm"
  PATH="$TOOLS/x/nvidia/cu13/bin:$PATH" cuobjdump -sass "$work/all.cubin" > "$SASS"
  echo "disassembly in $SASS"
fi
echo "kernels compile for sm_$ARCH"

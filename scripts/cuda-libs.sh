# Sourced by the scripts that run on the device machine: puts the CUDA image's libcuda /
# libnvrtc directories (the toolkit's lib64 and the pip wheels' lib folders) on
# LD_LIBRARY_PATH, where the backend's dynamic loading finds them, and defines `step` (below;
# $OUT must be set).
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cu13/lib") for p in nvidia.__path__))' 2>/dev/null) \
         $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cuda_nvrtc/lib") for p in nvidia.__path__))' 2>/dev/null); do
  [ -d "$d" ] && LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export LD_LIBRARY_PATH

# step NAME COMMAND...: runs COMMAND with a time limit ($STEP_TIMEOUT s, default 300), its output
# into $OUT/NAME.log; prints "== NAME rc=R (S s)" (also into $OUT/run.log, after the command)
# and the log's last $TAIL lines (default 6); records "STEP|NAME|rc=R" in $OUT/steps.txt.
# Always returns 0, so a failed step never stops the call.
step() {
  local name=$1; shift
  local t0; t0=$(date +%s)
  echo "$name: $*" >> "$OUT/run.log"
  timeout "${STEP_TIMEOUT:-300}" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc ($(( $(date +%s) - t0 )) s)" | tee -a "$OUT/run.log"
  tail -n "${TAIL:-6}" "$OUT/$name.log"
  echo "STEP|$name|rc=$rc" >> "$OUT/steps.txt"
  return 0
}

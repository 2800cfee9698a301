# Sourced by the scripts that run on the device machine: puts the CUDA image's libcuda /
# libnvrtc directories (the toolkit's lib64 and the pip wheels' lib folders) on
# LD_LIBRARY_PATH, where the backend's dynamic loading finds them.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cu13/lib") for p in nvidia.__path__))' 2>/dev/null) \
         $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cuda_nvrtc/lib") for p in nvidia.__path__))' 2>/dev/null); do
  [ -d "$d" ] && LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export LD_LIBRARY_PATH

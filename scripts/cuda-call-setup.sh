# Sourced first by the scripts a device call runs (scripts/cuda-next-call.sh and its kind):
# logs go to /tmp/glimmer-logs ($OUT; the call's own $OUT, where they are tarred at the end,
# becomes $R), models and the kernel cache to /tmp/glimmer-models ($M), the carried
# `cuda-check` is $C; sources scripts/cuda-libs.sh (libraries, `step`) and records the GPU.
R=$OUT; OUT=/tmp/glimmer-logs; mkdir -p $OUT; export OUT
M=/tmp/glimmer-models; export GLIMMER_CUDA_CACHE=$M/kernel-cache; mkdir -p $M
chmod +x devcarry/*; . scripts/cuda-libs.sh
C=devcarry/cuda-check
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt

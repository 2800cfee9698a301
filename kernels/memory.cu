// Bandwidth probe: dst[i] = src[i] over n 16-byte words (reads n*16 bytes, writes n*16 bytes).

extern "C" __global__ void copy_u128(const uint4* __restrict__ src, uint4* __restrict__ dst, long long n) {
    pdl_begin_small();
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

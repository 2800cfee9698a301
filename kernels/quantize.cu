// Activation quantization to q8_1-style blocks of 32: for block b of the flat input,
// q[32b..32b+32] = round(x / d) with d = max|x| / 127, and ds[b] = (d, d * sum(q)).

extern "C" __global__ void quantize_q8_1(const float* __restrict__ x, i8* __restrict__ q,
                                         float2* __restrict__ ds, int n_blocks) {
    pdl_begin_small();
    const int b = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (b >= n_blocks) return;  // whole warps leave together
    const float v = x[(size_t)b * 32 + lane];
    quantize_lane_q8(v, (size_t)b * 32 + lane, q, ds);
}

// Activation quantization to q8_1-style blocks of 32: for block b of the flat input,
// q[32b..32b+32] = round(x / d) with d = max|x| / 127, and ds[b] = (d, d * sum(q)).

extern "C" __global__ void quantize_q8_1(const float* __restrict__ x, i8* __restrict__ q,
                                         float2* __restrict__ ds, int n_blocks) {
    pdl_begin();
    const int b = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (b >= n_blocks) return;  // whole warps leave together
    const float v = x[(size_t)b * 32 + lane];
    const float amax = warp_max(fabsf(v));
    const float d = amax / 127.0f;
    const int qi = amax == 0.0f ? 0 : __float2int_rn(v / d);
    q[(size_t)b * 32 + lane] = (i8)qi;
    const int s = warp_sum_int(qi);
    if (lane == 0) ds[b] = make_float2(d, d * (float)s);
}

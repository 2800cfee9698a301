// Row-wise RMSNorm: out = x / sqrt(mean(x^2) + eps) * w (w may be null: gain 1). The sum of
// squares is taken in f64 as the CPU reference does. x == out is allowed: each thread writes
// only the elements it read. grid: rows; block: 256.

extern "C" __global__ void rmsnorm_f32(const float* x, const float* __restrict__ w, float* out, int dim,
                                       float eps) {
    __shared__ double part[32];
    const float* xr = x + (size_t)blockIdx.x * dim;
    float* orow = out + (size_t)blockIdx.x * dim;
    double s = 0.0;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        const float v = xr[i];
        s += (double)(v * v);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(FULL_MASK, s, o);
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) part[wid] = s;
    __syncthreads();
    if (wid == 0) {
        const int nw = (blockDim.x + 31) >> 5;
        double t = lane < nw ? part[lane] : 0.0;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(FULL_MASK, t, o);
        if (lane == 0) part[0] = t;
    }
    __syncthreads();
    const float mean = (float)(part[0] / (double)dim);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        const float v = __fmul_rn(xr[i], scale);
        orow[i] = w ? __fmul_rn(v, w[i]) : v;
    }
}

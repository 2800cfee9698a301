// Row-wise RMSNorm: out = x / sqrt(mean(x^2) + eps) * w (w may be null: gain 1). The sum of
// squares is taken in f64 as the CPU reference does. x == out is allowed: each thread writes
// only the elements it read. grid: rows; block: any multiple of 32 up to 1024.
// With ADD, x += y first (the residual add, as the CPU's `add` rounds it), written back to x;
// both loops give a thread the same elements, so it reads back only what it wrote.

template <bool Q, bool ADD>
__device__ __forceinline__ void rmsnorm_row(float* x, const float* __restrict__ y, const float* __restrict__ w,
                                            float* out, int dim, float eps, i8* __restrict__ q,
                                            float2* __restrict__ ds) {
    pdl_begin();
    __shared__ double part[32];
    float* xr = x + (size_t)blockIdx.x * dim;
    float* orow = out + (size_t)blockIdx.x * dim;
    double s = 0.0;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        float v = xr[i];
        if (ADD) {
            v = __fadd_rn(v, y[(size_t)blockIdx.x * dim + i]);
            xr[i] = v;
        }
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
        float v = __fmul_rn(xr[i], scale);
        v = w ? __fmul_rn(v, w[i]) : v;
        orow[i] = v;
        if (Q) {
            // The warp holds the 32 values of one q8_1 block: quantize as quantize_q8_1 does.
            const size_t e = (size_t)blockIdx.x * dim + i;
            const float amax = warp_max(fabsf(v));
            const float d = amax / 127.0f;
            const int qi = amax == 0.0f ? 0 : __float2int_rn(v / d);
            q[e] = (i8)qi;
            const int s = warp_sum_int(qi);
            if ((threadIdx.x & 31) == 0) ds[e >> 5] = make_float2(d, d * (float)s);
        }
    }
}

extern "C" __global__ void rmsnorm_f32(const float* x, const float* __restrict__ w, float* out, int dim,
                                       float eps) {
    rmsnorm_row<false, false>(const_cast<float*>(x), nullptr, w, out, dim, eps, nullptr, nullptr);
}

// RMSNorm that also leaves its output quantized to q8_1 blocks in `q`/`ds`, for the matmul that
// reads it next. Needs dim a multiple of 32 and a block of whole warps.
extern "C" __global__ void rmsnorm_q8_f32(const float* x, const float* __restrict__ w, float* out, int dim,
                                          float eps, i8* __restrict__ q, float2* __restrict__ ds) {
    rmsnorm_row<true, false>(const_cast<float*>(x), nullptr, w, out, dim, eps, q, ds);
}

// The residual add and the next norm in one launch: x += y, then out = rmsnorm(x) * w
// (`Backend::add_rmsnorm`); out must not overlap x or y.
extern "C" __global__ void add_rmsnorm_f32(float* x, const float* __restrict__ y, const float* __restrict__ w,
                                           float* out, int dim, float eps) {
    rmsnorm_row<false, true>(x, y, w, out, dim, eps, nullptr, nullptr);
}

// The same, also leaving out quantized to q8_1 for the matmul that reads it next.
extern "C" __global__ void add_rmsnorm_q8_f32(float* x, const float* __restrict__ y, const float* __restrict__ w,
                                              float* out, int dim, float eps, i8* __restrict__ q,
                                              float2* __restrict__ ds) {
    rmsnorm_row<true, true>(x, y, w, out, dim, eps, q, ds);
}

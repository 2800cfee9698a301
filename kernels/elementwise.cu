// Element-wise ops over n floats (grid-stride loops).

#define GRID_STRIDE(i, n) for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
                               i += (long long)gridDim.x * blockDim.x)

extern "C" __global__ void add_f32(float* x, const float* __restrict__ y, long long n) {
    pdl_begin_small();
    GRID_STRIDE(i, n) x[i] += y[i];
}

extern "C" __global__ void scale_f32(float* x, float s, long long n) {
    pdl_begin_small();
    GRID_STRIDE(i, n) x[i] = __fmul_rn(x[i], s);
}

// x = cap * tanh(x * scale / cap)
extern "C" __global__ void softcap_f32(float* x, float cap, float scale, long long n) {
    pdl_begin_small();
    GRID_STRIDE(i, n) x[i] = cap * tanhf(__fdiv_rn(__fmul_rn(x[i], scale), cap));
}

// x *= sigmoid(g)
extern "C" __global__ void sigmoid_mul_f32(float* x, const float* __restrict__ g, long long n) {
    pdl_begin_small();
    GRID_STRIDE(i, n) x[i] *= 1.0f / (1.0f + expf(-g[i]));
}

__device__ __forceinline__ float silu(float v) { return v / (1.0f + expf(-v)); }

// GELU (tanh form) with the input and the result rounded to f16, as the CPU reference (and
// GGML's table) does.
__device__ __forceinline__ float gelu_tanh_f16(float v) {
    if (v <= -10.0f) return 0.0f;
    if (v >= 10.0f) return v;
    const float xh = round_f16(v);
    const float inner = 0.7978846f * xh * (1.0f + 0.044715f * xh * xh);
    return round_f16(0.5f * xh * (1.0f + tanhf(inner)));
}

// g = silu(g) * u
extern "C" __global__ void gated_silu_f32(float* g, const float* __restrict__ u, long long n) {
    pdl_begin_small();
    GRID_STRIDE(i, n) g[i] = silu(g[i]) * u[i];
}

// g = gelu_tanh(g) * u
extern "C" __global__ void gated_gelu_tanh_f32(float* g, const float* __restrict__ u, long long n) {
    pdl_begin_small();
    GRID_STRIDE(i, n) g[i] = gelu_tanh_f16(g[i]) * u[i];
}

// The gated activation (act 0: SiLU, 1: GELU-tanh) that also leaves g quantized to q8_1 for
// the down projection. n a multiple of 32; one thread per element (grid: n / 256 blocks of 256,
// rounded up; whole warps leave together).
extern "C" __global__ void gated_act_q8(float* g, const float* __restrict__ u, long long n, int act,
                                        i8* __restrict__ q, float2* __restrict__ ds) {
    pdl_begin_small();
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if ((i & ~31LL) >= n) return;
    const float v = g[i];
    const float y = (act == 0 ? silu(v) : gelu_tanh_f16(v)) * u[i];
    g[i] = y;
    quantize_lane_q8(y, (size_t)i, q, ds);
}

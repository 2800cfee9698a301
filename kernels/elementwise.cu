// Element-wise ops over n floats (grid-stride loops).

#define GRID_STRIDE(i, n) for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
                               i += (long long)gridDim.x * blockDim.x)

extern "C" __global__ void add_f32(float* x, const float* __restrict__ y, long long n) {
    pdl_begin();
    GRID_STRIDE(i, n) x[i] += y[i];
}

extern "C" __global__ void scale_f32(float* x, float s, long long n) {
    pdl_begin();
    GRID_STRIDE(i, n) x[i] = __fmul_rn(x[i], s);
}

// x = cap * tanh(x * scale / cap)
extern "C" __global__ void softcap_f32(float* x, float cap, float scale, long long n) {
    pdl_begin();
    GRID_STRIDE(i, n) x[i] = cap * tanhf(__fdiv_rn(__fmul_rn(x[i], scale), cap));
}

// x *= sigmoid(g)
extern "C" __global__ void sigmoid_mul_f32(float* x, const float* __restrict__ g, long long n) {
    pdl_begin();
    GRID_STRIDE(i, n) x[i] *= 1.0f / (1.0f + expf(-g[i]));
}

// g = silu(g) * u
extern "C" __global__ void gated_silu_f32(float* g, const float* __restrict__ u, long long n) {
    pdl_begin();
    GRID_STRIDE(i, n) {
        const float v = g[i];
        g[i] = (v / (1.0f + expf(-v))) * u[i];
    }
}

// g = gelu_tanh(g) * u, with the input and the GELU result rounded to f16 as the CPU
// reference (and GGML's table) does.
extern "C" __global__ void gated_gelu_tanh_f32(float* g, const float* __restrict__ u, long long n) {
    pdl_begin();
    GRID_STRIDE(i, n) {
        const float v = g[i];
        float y;
        if (v <= -10.0f) {
            y = 0.0f;
        } else if (v >= 10.0f) {
            y = v;
        } else {
            const float xh = round_f16(v);
            const float inner = 0.7978846f * xh * (1.0f + 0.044715f * xh * xh);
            y = round_f16(0.5f * xh * (1.0f + tanhf(inner)));
        }
        g[i] = y * u[i];
    }
}

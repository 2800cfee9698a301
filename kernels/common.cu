// Shared helpers for every Glimmer CUDA kernel. This file is compiled first, in the same NVRTC
// program as the op files, so it needs no headers: f16 conversions go through PTX `cvt`.

typedef unsigned char u8;
typedef signed char i8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define FULL_MASK 0xffffffffu
#define NEG_INF __int_as_float(0xff800000)

// GGML type ids (the GGUF tensor table's numbering).
#define T_F32 0
#define T_F16 1
#define T_Q4_0 2
#define T_Q4_1 3
#define T_Q5_0 6
#define T_Q8_0 8
#define T_Q4_K 12
#define T_Q5_K 13
#define T_Q6_K 14
#define T_BF16 30

__device__ __forceinline__ float h2f(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ u16 f2h(float f) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

// f32 -> f16 -> f32 (round to nearest even).
__device__ __forceinline__ float round_f16(float f) { return h2f(f2h(f)); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

__device__ __forceinline__ int warp_sum_int(int v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}

// Programmatic dependent launch (sm_90 and later; nothing on older GPUs). The host launches
// every kernel with programmatic stream serialization, so a kernel may start while the one
// before it on the stream is still running. Each kernel therefore calls `pdl_begin()` before
// it touches any memory another kernel writes or reads: it waits until the previous kernel has
// finished and its writes are visible, then lets the next kernel start its own blocks. Only
// memory no kernel writes (the weights) may be read before it: the GEMVs prefetch their first
// weight bytes into L2 there, which overlaps the previous kernel's tail.
__device__ __forceinline__ void pdl_begin() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Starts fetching the 128-byte line at `p` into L2 (read-only data).
__device__ __forceinline__ void prefetch_l2(const void* p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

// Little-endian u16 at any address.
__device__ __forceinline__ u16 ld_u16(const u8* p) { return (u16)((u32)p[0] | ((u32)p[1] << 8)); }

// 4 bytes at a 2-byte aligned address.
__device__ __forceinline__ int ld_i32_a2(const u8* p) {
    const u16* q = (const u16*)p;
    return (int)((u32)q[0] | ((u32)q[1] << 16));
}

// 4 bytes at a 4-byte aligned address.
__device__ __forceinline__ int ld_i32_a4(const u8* p) { return *(const int*)p; }

// Scale and min of sub-block j (0..8) of a Q4_K / Q5_K block's 12 packed bytes.
__device__ __forceinline__ void scale_min_k4(int j, const u8* s, int* sc, int* m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

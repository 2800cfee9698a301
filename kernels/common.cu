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
//
// The small kernels between the GEMVs (norms, attention, activations: a few blocks each) call
// `pdl_begin_small()` instead, which lets the next kernel launch before it waits. The next
// kernel's own wait still covers this one's completion (and so, transitively, the one before),
// so nothing is read early; but a GEMV that follows a norm then launches while the GEMV before
// the norm is still finishing and prefetches its first weight lines then, as it does after
// another GEMV. (A grid lets its dependents launch only once every one of its blocks has
// triggered or exited, so a large grid is never starved of its own blocks.) Measured on the
// H100 (BENCHMARKS.md, session 9): 111.5 -> 112.9-113.3 tok/s on the 30B shape; doing the same
// in the GEMVs too gained nothing more.
__device__ __forceinline__ void pdl_begin() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_begin_small() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Flag hops (a measuring knob, `CudaBackend::flag_hop`): a one-row norm tells the bulk-copy GEMV
// after it that its output is written through a counter pair in device memory instead of the
// end of its grid. The norm's blocks each add one to dep[0] once all their threads' writes are
// done (hop_signal); the GEMV's blocks let the next kernel launch, then wait until dep[0]
// reaches the norm's block count (hop_wait) instead of griddepcontrol.wait, and the last of
// them to pass zeroes the pair for the next hop. Everything else the GEMV touches was finished
// before the norm started (the norm itself waits on its predecessor's grid), and the kernel
// after the GEMV waits on the GEMV's grid as usual.
__device__ __forceinline__ void hop_signal(u32* sig) {
    if (!sig) return;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(sig, 1u);
    }
}
__device__ __forceinline__ void hop_wait(u32* dep, u32 n) {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    if (threadIdx.x == 0) {
        u32 v;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(dep) : "memory");
        } while (v < n);
        if (atomicAdd(dep + 1, 1u) == gridDim.x * gridDim.y - 1) {
            atomicExch(dep, 0u);
            atomicExch(dep + 1, 0u);
        }
    }
    __syncthreads();
}

// 1: the GEMVs' 16-byte weight loads carry an L2 evict-first policy and skip L1 (each such
// byte is read once a token), so the lines prefetched for the next GEMV and the activations
// are the last to go; 0: plain read-only loads.
#ifndef GEMV_STREAM_HINT
#define GEMV_STREAM_HINT 0
#endif

// 16 bytes of weights at a 16-byte aligned `p` (see GEMV_STREAM_HINT).
__device__ __forceinline__ uint4 ld_weights16(const void* p) {
#if GEMV_STREAM_HINT && __CUDA_ARCH__ >= 800
    uint4 v;
    u64 pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p), "l"(pol));
    return v;
#else
    return __ldg((const uint4*)p);
#endif
}

// Starts fetching the 128-byte line at `p` into L2 (read-only data).
// This block's share of the `bytes` at `p` (16-byte aligned, a multiple of 16; null: none)
// into L2, by thread 0, in bulk prefetches of at most 1 MiB: weights a later launch reads,
// asked for by a launch that itself reads little, so that HBM streams them while it would
// otherwise idle (attention before the output projection, `CudaBackend::attn_prefetch_bytes`).
// Any grid shape: every block takes its own share. Status: 0.13 ms a step slower on the H100
// (session 20); off by default.
__device__ __forceinline__ void l2_prefetch_share(const u8* p, u64 bytes) {
#if __CUDA_ARCH__ >= 900
    if (!p || threadIdx.x != 0) return;
    const u64 blocks = (u64)gridDim.x * gridDim.y * gridDim.z;
    const u64 b = blockIdx.x + (u64)gridDim.x * (blockIdx.y + (u64)gridDim.y * blockIdx.z);
    const u64 share = ((bytes + blocks - 1) / blocks + 15) & ~15ull;
    u64 off = b * share;
    if (off >= bytes) return;
    u64 n = min(share, bytes - off) & ~15ull;
    while (n) {
        const u32 c = (u32)min(n, (u64)1 << 20);
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + off), "r"(c) : "memory");
        off += c;
        n -= c;
    }
#endif
}

__device__ __forceinline__ void prefetch_l2(const void* p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

// 1: every thread of a ticket's block runs __threadfence() (MEMBAR.SC.GPU and an L1
// invalidate) before the block counts itself in, as the session-8 attention merge did; 0 (the
// default): only the thread that takes the ticket fences, after the block's barrier, which is
// the order cooperative groups' grid barrier relies on (bar.sync orders the block's writes
// before that thread's fence, and a fence is cumulative). A measuring knob
// ($GLIMMER_CUDA_DEFINES=TICKET_FENCE_ALL=1).
#ifndef TICKET_FENCE_ALL
#define TICKET_FENCE_ALL 0
#endif

// Counts the calling block in on the ticket `ctr` once every thread of it has made its global
// writes; true (in every thread) for the last of `n` blocks to do so, which may then read what
// all of them wrote (through L2: `__ldcg`, or plain loads after this, since the fence of the
// last block's ticket thread drops the multiprocessor's L1). Every thread of the block must
// call it. The caller resets `*ctr` for the next launch.
__device__ __forceinline__ bool ticket_last(u32* ctr, u32 n) {
    __shared__ bool last;
    if (TICKET_FENCE_ALL) __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(ctr, 1u) == n - 1;
        if (last) __threadfence();
    }
    __syncthreads();
    return last;
}

// The sum of warp 0's `t` (lane l's), by one shuffle tree, handed to every thread of the block
// through part[0]; the other warps' `t` is ignored. Every thread of the block calls it.
__device__ __forceinline__ double warp0_sum_to_block(double t, double* part) {
    if (threadIdx.x < 32) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(FULL_MASK, t, o);
        if (threadIdx.x == 0) part[0] = t;
    }
    __syncthreads();
    const double total = part[0];
    __syncthreads();
    return total;
}

// Sum of `s` over the block (every thread gets it), through `part` (32 doubles of shared
// memory). May be called again on the same `part`: it ends with a barrier.
__device__ __forceinline__ double block_sum_f64(double s, double* part) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(FULL_MASK, s, o);
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) part[wid] = s;
    __syncthreads();
    const int nw = (blockDim.x + 31) >> 5;
    return warp0_sum_to_block(wid == 0 && lane < nw ? part[lane] : 0.0, part);
}

// The RMSNorm scale of a row of `dim` whose squares sum to `ss` (f64, as the CPU sums them).
__device__ __forceinline__ float rms_scale(double ss, int dim, float eps) {
    const float mean = (float)(ss / (double)dim);
    return 1.0f / sqrtf(mean + eps);
}

// The q8_1 value of v, one element of a block of 32 held by the calling warp (lane l holds
// element l), as `quantize_q8_1` makes it: returns the lane's int8 value and leaves the block's
// scale in *d (every lane). The block's pair is (d, d · warp_sum_int(value)).
__device__ __forceinline__ int q8_lane(float v, float* d) {
    const float amax = warp_max(fabsf(v));
    *d = amax / 127.0f;
    return amax == 0.0f ? 0 : __float2int_rn(v / *d);
}

// The shared-memory address of a generic pointer into shared memory.
__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }

#if __CUDA_ARCH__ >= 900
// ---- Thread-block clusters (sm_90): the cluster norms (norm.cu) and attention (attention.cu) ----
// Every thread of the cluster arrives (its earlier shared-memory writes, its own and remote,
// released to the cluster) and waits for all the others.
__device__ __forceinline__ void cluster_sync_all() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The cluster barrier's halves: arriving (relaxed: nothing to publish) and waiting. A kernel
// that stores into other blocks' shared memory arrives at its start and waits just before
// its first remote store, so that none lands before every block of the cluster has started.
__device__ __forceinline__ void cluster_arrive_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }
__device__ __forceinline__ u32 cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 cluster_blocks() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}
// `p` (this block's shared-memory layout) in cluster block `rank`'s shared memory.
__device__ __forceinline__ u32 cluster_addr(const void* p, u32 rank) {
    u32 ra;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(smem_u32(p)), "r"(rank));
    return ra;
}
// Stores v at `p` in cluster block `rank`'s shared memory.
__device__ __forceinline__ void st_cluster_f64(double* p, u32 rank, double v) {
    asm volatile("st.shared::cluster.f64 [%0], %1;" ::"r"(cluster_addr(p, rank)), "d"(v) : "memory");
}
__device__ __forceinline__ void st_cluster_f32(float* p, u32 rank, float v) {
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(cluster_addr(p, rank)), "f"(v) : "memory");
}
__device__ __forceinline__ void st_cluster_f32x2(float2* p, u32 rank, float2 v) {
    asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" ::"r"(cluster_addr(p, rank)), "f"(v.x), "f"(v.y)
                 : "memory");
}
#endif

// Quantizes v, one element of a q8_1 block of 32 held by the calling warp (lane l holds element
// l of the block starting at element `e - lane`), into q/ds as `quantize_q8_1` does.
__device__ __forceinline__ void quantize_lane_q8(float v, size_t e, i8* __restrict__ q, float2* __restrict__ ds) {
    float d;
    const int qi = q8_lane(v, &d);
    q[e] = (i8)qi;
    const int s = warp_sum_int(qi);
    if ((threadIdx.x & 31) == 0) ds[e >> 5] = make_float2(d, d * (float)s);
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

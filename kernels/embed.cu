// Embedding lookup: out[r] = dequantize(table row tokens[r]), element by element, for every
// block format the GEMV kernels read plus F32 / F16 / BF16.

// Element i of a row of `cols` (Q6_K rows are in the device's plane layout).
__device__ float dequant_elem(int ty, const u8* __restrict__ row, int i, int cols) {
    switch (ty) {
    case T_F32: return ((const float*)row)[i];
    case T_F16: return h2f(ld_u16(row + 2 * i));
    case T_BF16: return __uint_as_float((u32)ld_u16(row + 2 * i) << 16);
    case T_Q4_0: {
        const u8* b = row + (i >> 5) * 18;
        const int e = i & 31;
        const u8 v = b[2 + (e & 15)];
        const int q = (e < 16 ? (v & 15) : (v >> 4)) - 8;
        return h2f(ld_u16(b)) * (float)q;
    }
    case T_Q4_1: {
        const u8* b = row + (i >> 5) * 20;
        const int e = i & 31;
        const u8 v = b[4 + (e & 15)];
        const int q = e < 16 ? (v & 15) : (v >> 4);
        return __fmaf_rn(h2f(ld_u16(b)), (float)q, h2f(ld_u16(b + 2)));
    }
    case T_Q5_0: {
        const u8* b = row + (i >> 5) * 22;
        const int e = i & 31;
        const u32 qh = (u32)ld_u16(b + 2) | ((u32)ld_u16(b + 4) << 16);
        const u8 v = b[6 + (e & 15)];
        const int q = ((e < 16 ? (v & 15) : (v >> 4)) | (((qh >> e) & 1) << 4)) - 16;
        return h2f(ld_u16(b)) * (float)q;
    }
    case T_Q8_0: {
        const u8* b = row + (i >> 5) * 34;
        return h2f(ld_u16(b)) * (float)((const i8*)b)[2 + (i & 31)];
    }
    case T_Q4_K:
    case T_Q5_K: {
        const int bs = ty == T_Q4_K ? 144 : 176;
        const u8* b = row + (i >> 8) * bs;
        const int e = i & 255, j = e >> 5, l = e & 31;
        const u8* qs = b + (ty == T_Q4_K ? 16 : 48) + 32 * (j >> 1);
        int q = (j & 1) ? (qs[l] >> 4) : (qs[l] & 15);
        if (ty == T_Q5_K) q |= ((b[16 + l] >> j) & 1) << 4;
        int sc, mn;
        scale_min_k4(j, b + 4, &sc, &mn);
        const float ds = __fmul_rn(h2f(ld_u16(b)), (float)sc);
        const float dm = __fmul_rn(h2f(ld_u16(b + 2)), (float)mn);
        return __fsub_rn(__fmul_rn(ds, (float)q), dm);
    }
    case T_Q6_K: {
        const size_t nb = (size_t)(cols >> 8), kb = (size_t)(i >> 8);
        const int e = i & 255, h = e >> 7, g = (e >> 5) & 3, l = e & 31;
        const u8 v = row[128 * kb + 64 * h + 32 * (g & 1) + l];
        const int lo = (g >> 1) ? (v >> 4) : (v & 15);
        const int hi = (row[128 * nb + 64 * kb + 32 * h + l] >> (2 * g)) & 3;
        const i8 sc = ((const i8*)(row + 192 * nb + 16 * kb))[e >> 4];
        const float ds = __fmul_rn(h2f(ld_u16(row + 208 * nb + 2 * kb)), (float)sc);
        return __fmul_rn(ds, (float)((lo | (hi << 4)) - 32));
    }
    default: return 0.0f;
    }
}

// grid: rows; tokens in device memory.
extern "C" __global__ void embed_rows(const u8* __restrict__ table, int ty, u64 row_bytes, int cols,
                                      const u32* __restrict__ tokens, float* __restrict__ out) {
    pdl_begin_small();
    const int r = blockIdx.x;
    const u8* row = table + (size_t)tokens[r] * row_bytes;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) out[(size_t)r * cols + i] = dequant_elem(ty, row, i, cols);
}

//! Scalar dequantization, one function per block type.
//!
//! Each output value is computed with the same f32 operations in the same order as gguf-py's
//! `gguf.quants.dequantize`, so results match it bit for bit (e.g. Q4_K is `(d * sc) * q -
//! (dmin * m)`, never `d * (sc * q)`).
//!
//! Contract shared by every function here: `out.len()` should be `blocks.len()` times the
//! block size. Only whole pairs of (block, output chunk) are processed; any excess on either
//! side is left alone (the dispatcher in `mod.rs` checks lengths before calling).

use super::blocks::{
    unpack_scales_mins, Bf16Le, BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5K, BlockQ5_0, BlockQ6K,
    BlockQ8K, BlockQ8_0, BlockQ8_1, F16Le, F32Le, QK32, QK_K,
};

/// F32 → f32 (a little-endian copy).
pub fn dequantize_f32(src: &[F32Le], out: &mut [f32]) {
    for (x, y) in src.iter().zip(out.iter_mut()) {
        *y = x.get();
    }
}

/// F16 → f32 (exact).
pub fn dequantize_f16(src: &[F16Le], out: &mut [f32]) {
    for (x, y) in src.iter().zip(out.iter_mut()) {
        *y = x.to_f32();
    }
}

/// BF16 → f32 (exact).
pub fn dequantize_bf16(src: &[Bf16Le], out: &mut [f32]) {
    for (x, y) in src.iter().zip(out.iter_mut()) {
        *y = x.to_f32();
    }
}

/// Q4_0 → f32: `d * (q - 8)`.
pub fn dequantize_q4_0(blocks: &[BlockQ4_0], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK32)) {
        let d = b.d.to_f32();
        for (&q, v) in b.quants().iter().zip(y) {
            *v = d * f32::from(q);
        }
    }
}

/// Q4_1 → f32: `d * q + m`.
pub fn dequantize_q4_1(blocks: &[BlockQ4_1], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK32)) {
        let (d, m) = (b.d.to_f32(), b.m.to_f32());
        for (&q, v) in b.quants().iter().zip(y) {
            *v = d * f32::from(q) + m;
        }
    }
}

/// Q5_0 → f32: `d * (q - 16)` with the fifth bit from `qh`.
pub fn dequantize_q5_0(blocks: &[BlockQ5_0], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK32)) {
        let d = b.d.to_f32();
        for (&q, v) in b.quants().iter().zip(y) {
            *v = d * f32::from(q);
        }
    }
}

/// Q8_0 → f32: `d * q`.
pub fn dequantize_q8_0(blocks: &[BlockQ8_0], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK32)) {
        let d = b.d.to_f32();
        for (&q, v) in b.qs.iter().zip(y) {
            *v = d * f32::from(q);
        }
    }
}

/// Q8_1 → f32: `d * q` (the `s` field is redundant for dequantization).
pub fn dequantize_q8_1(blocks: &[BlockQ8_1], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK32)) {
        let d = b.d.to_f32();
        for (&q, v) in b.qs.iter().zip(y) {
            *v = d * f32::from(q);
        }
    }
}

/// `(d * sc) * q - (dmin * m)` over the 8 sub-blocks of 32 of a Q4_K / Q5_K super-block.
#[inline(always)]
fn dequantize_kmin(q: &[i8; QK_K], d: F16Le, dmin: F16Le, scales: &[u8; 12], y: &mut [f32]) {
    let (d, dmin) = (d.to_f32(), dmin.to_f32());
    let (sc, m) = unpack_scales_mins(scales);
    for (j, (qs, ys)) in q.chunks_exact(32).zip(y.chunks_exact_mut(32)).enumerate() {
        let (ds, dm) = (d * f32::from(sc[j]), dmin * f32::from(m[j]));
        for (&q, v) in qs.iter().zip(ys) {
            *v = ds * f32::from(q) - dm;
        }
    }
}

/// Q4_K → f32: per sub-block of 32, `(d * sc) * q - (dmin * m)`.
pub fn dequantize_q4_k(blocks: &[BlockQ4K], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        dequantize_kmin(&b.quants(), b.d, b.dmin, &b.scales, y);
    }
}

/// Q5_K → f32: per sub-block of 32, `(d * sc) * q - (dmin * m)` with 5-bit `q`.
pub fn dequantize_q5_k(blocks: &[BlockQ5K], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        dequantize_kmin(&b.quants(), b.d, b.dmin, &b.scales, y);
    }
}

/// Q6_K → f32: per sub-block of 16, `(d * scale) * (q - 32)`.
pub fn dequantize_q6_k(blocks: &[BlockQ6K], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = b.d.to_f32();
        let q = b.quants();
        for ((qs, ys), &s) in q
            .chunks_exact(16)
            .zip(y.chunks_exact_mut(16))
            .zip(&b.scales)
        {
            let ds = d * f32::from(s);
            for (&q, v) in qs.iter().zip(ys) {
                *v = ds * f32::from(q);
            }
        }
    }
}

/// Q8_K → f32: `d * q` with the f32 scale.
pub fn dequantize_q8_k(blocks: &[BlockQ8K], out: &mut [f32]) {
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = b.d.get();
        for (&q, v) in b.qs.iter().zip(y) {
            *v = d * f32::from(q);
        }
    }
}

//! Scalar dot products of one weight row with one activation row, structured like ggml's
//! CPU reference kernels: each block's quants are multiplied and summed exactly in `i32`, and
//! only then scaled by the f32 product of the two block scales and added to an f32 total.
//!
//! Rows are passed as block slices; blocks are paired in order and a longer side's excess is
//! ignored (the dispatcher in `mod.rs` checks lengths before calling).

use super::blocks::{
    unpack_scales_mins, Bf16Le, BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5K, BlockQ5_0, BlockQ6K,
    BlockQ8K, BlockQ8_0, BlockQ8_1, F16Le, F32Le, K_SCALE_SIZE, QK_K,
};

/// Lanes of the float dot products: eight independent partial sums, added pairwise at the end.
const LANES: usize = 8;

#[inline]
fn lane_dot(a: impl Iterator<Item = f32>, b: impl Iterator<Item = f32>) -> f32 {
    let mut acc = [0.0f32; LANES];
    for (i, (x, y)) in a.zip(b).enumerate() {
        acc[i % LANES] += x * y;
    }
    let [a0, a1, a2, a3, a4, a5, a6, a7] = acc;
    ((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7))
}

/// F32 · F32.
pub fn vec_dot_f32(w: &[F32Le], a: &[F32Le]) -> f32 {
    lane_dot(w.iter().map(|v| v.get()), a.iter().map(|v| v.get()))
}

/// F16 · F16: both widened to f32, products summed in f32.
pub fn vec_dot_f16(w: &[F16Le], a: &[F16Le]) -> f32 {
    lane_dot(w.iter().map(|v| v.to_f32()), a.iter().map(|v| v.to_f32()))
}

/// BF16 · BF16: both widened to f32, products summed in f32.
pub fn vec_dot_bf16(w: &[Bf16Le], a: &[Bf16Le]) -> f32 {
    lane_dot(w.iter().map(|v| v.to_f32()), a.iter().map(|v| v.to_f32()))
}

/// Exact integer dot product of equal-length quant runs (the lengths used are 16 and 32).
#[inline(always)]
fn dot_i8(q: &[i8], a: &[i8]) -> i32 {
    q.iter()
        .zip(a)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum()
}

/// Q4_0 · Q8_0: `sum(((q4 - 8) · q8)) * (d_w * d_a)` per block.
pub fn vec_dot_q4_0_q8_0(w: &[BlockQ4_0], a: &[BlockQ8_0]) -> f32 {
    let mut sumf = 0.0f32;
    for (x, y) in w.iter().zip(a) {
        let sumi = dot_i8(&x.quants(), &y.qs);
        sumf += sumi as f32 * (x.d.to_f32() * y.d.to_f32());
    }
    sumf
}

/// Q4_1 · Q8_1: `sum(q4 · q8) * (d_w * d_a) + m_w * s_a` per block.
pub fn vec_dot_q4_1_q8_1(w: &[BlockQ4_1], a: &[BlockQ8_1]) -> f32 {
    let mut sumf = 0.0f32;
    for (x, y) in w.iter().zip(a) {
        let sumi = dot_i8(&x.quants(), &y.qs);
        sumf += (x.d.to_f32() * y.d.to_f32()) * sumi as f32 + x.m.to_f32() * y.s.to_f32();
    }
    sumf
}

/// Q5_0 · Q8_0: `sum(((q5 - 16) · q8)) * (d_w * d_a)` per block.
pub fn vec_dot_q5_0_q8_0(w: &[BlockQ5_0], a: &[BlockQ8_0]) -> f32 {
    let mut sumf = 0.0f32;
    for (x, y) in w.iter().zip(a) {
        let sumi = dot_i8(&x.quants(), &y.qs);
        sumf += sumi as f32 * (x.d.to_f32() * y.d.to_f32());
    }
    sumf
}

/// Q8_0 · Q8_0: `sum(q · q) * (d_w * d_a)` per block.
pub fn vec_dot_q8_0_q8_0(w: &[BlockQ8_0], a: &[BlockQ8_0]) -> f32 {
    let mut sumf = 0.0f32;
    for (x, y) in w.iter().zip(a) {
        let sumi = dot_i8(&x.qs, &y.qs);
        sumf += sumi as f32 * (x.d.to_f32() * y.d.to_f32());
    }
    sumf
}

/// The integer sums of a Q4_K / Q5_K super-block against Q8_K:
/// `(sum(sc · q · q8), sum(m · (bsums[2j] + bsums[2j + 1])))`.
#[inline(always)]
fn kmin_sums(q: &[i8; QK_K], scales: &[u8; K_SCALE_SIZE], y: &BlockQ8K) -> (i32, i32) {
    let (sc, m) = unpack_scales_mins(scales);
    let mut sumi = 0i32;
    for ((qs, a), &s) in q.chunks_exact(32).zip(y.qs.chunks_exact(32)).zip(&sc) {
        sumi += i32::from(s) * dot_i8(qs, a);
    }
    let mins = m
        .iter()
        .zip(y.bsums.chunks_exact(2))
        .map(|(&m, b)| i32::from(m) * (i32::from(b[0].get()) + i32::from(b[1].get())))
        .sum();
    (sumi, mins)
}

/// Q4_K · Q8_K: per super-block `d_w*d_a * sum(sc · q4 · q8) - dmin_w*d_a * sum(m · bsums)`.
pub fn vec_dot_q4_k_q8_k(w: &[BlockQ4K], a: &[BlockQ8K]) -> f32 {
    let mut sumf = 0.0f32;
    for (x, y) in w.iter().zip(a) {
        let (sumi, mins) = kmin_sums(&x.quants(), &x.scales, y);
        let da = y.d.get();
        sumf += x.d.to_f32() * da * sumi as f32;
        sumf -= x.dmin.to_f32() * da * mins as f32;
    }
    sumf
}

/// Q5_K · Q8_K: as Q4_K with 5-bit quants.
pub fn vec_dot_q5_k_q8_k(w: &[BlockQ5K], a: &[BlockQ8K]) -> f32 {
    let mut sumf = 0.0f32;
    for (x, y) in w.iter().zip(a) {
        let (sumi, mins) = kmin_sums(&x.quants(), &x.scales, y);
        let da = y.d.get();
        sumf += x.d.to_f32() * da * sumi as f32;
        sumf -= x.dmin.to_f32() * da * mins as f32;
    }
    sumf
}

/// Q6_K · Q8_K: per super-block `d_w*d_a * sum(scale · (q6 - 32) · q8)`.
pub fn vec_dot_q6_k_q8_k(w: &[BlockQ6K], a: &[BlockQ8K]) -> f32 {
    let mut sumf = 0.0f32;
    for (x, y) in w.iter().zip(a) {
        let q = x.quants();
        let mut sumi = 0i32;
        for ((qs, a), &s) in q.chunks_exact(16).zip(y.qs.chunks_exact(16)).zip(&x.scales) {
            sumi += i32::from(s) * dot_i8(qs, a);
        }
        sumf += x.d.to_f32() * y.d.get() * sumi as f32;
    }
    sumf
}

/// Q8_K · Q8_K: `sum(q · q) * (d_w * d_a)` per super-block.
pub fn vec_dot_q8_k_q8_k(w: &[BlockQ8K], a: &[BlockQ8K]) -> f32 {
    let mut sumf = 0.0f32;
    for (x, y) in w.iter().zip(a) {
        let sumi = dot_i8(&x.qs, &y.qs);
        sumf += sumi as f32 * (x.d.get() * y.d.get());
    }
    sumf
}

//! Scalar quantization of f32 rows: the activation formats (Q8_0, Q8_1, Q8_K, F16, BF16, F32)
//! and the 32-element weight formats (Q4_0, Q4_1, Q5_0), each with ggml's reference rounding.
//!
//! Same length contract as `dequant`: `x.len()` should be `out.len()` times the block size;
//! only whole (input chunk, block) pairs are written.

use super::blocks::{
    Bf16Le, BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ8K, BlockQ8_0, BlockQ8_1, F16Le, F32Le, I16Le,
    QK32, QK_K,
};
use super::num::{round_away, round_even};

/// f32 → F32 (little-endian copy).
pub fn quantize_f32(x: &[f32], out: &mut [F32Le]) {
    for (&v, y) in x.iter().zip(out.iter_mut()) {
        *y = F32Le::new(v);
    }
}

/// f32 → F16, round to nearest even.
pub fn quantize_f16(x: &[f32], out: &mut [F16Le]) {
    for (&v, y) in x.iter().zip(out.iter_mut()) {
        *y = F16Le::from_f32(v);
    }
}

/// f32 → BF16, round to nearest even, NaN made quiet.
pub fn quantize_bf16(x: &[f32], out: &mut [Bf16Le]) {
    for (&v, y) in x.iter().zip(out.iter_mut()) {
        *y = Bf16Le::from_f32(v);
    }
}

/// The value with the largest magnitude (the first one on ties), and that magnitude.
#[inline]
fn signed_absmax(x: &[f32]) -> (f32, f32) {
    let (mut max, mut amax) = (0.0f32, 0.0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    (max, amax)
}

/// Writes the Q8_0 quants `roundf(x * id)` of 32 values, with `id = 1 / d` (0 when `d` is 0),
/// and returns the f32 scale `d = amax / 127`.
#[inline]
fn q8_block(x: &[f32], qs: &mut [i8; QK32]) -> f32 {
    let amax = x
        .iter()
        .fold(0.0f32, |m, v| if v.abs() > m { v.abs() } else { m });
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    for (&v, q) in x.iter().zip(qs.iter_mut()) {
        *q = round_away(v * id).clamp(-128, 127) as i8;
    }
    d
}

/// Activation quants of 32 values as llama.cpp's x86 CPU backend writes them:
/// `q = round_half_even(x * (127 / amax))`. Returns the f32 scale `d = amax / 127`.
///
/// This differs from [`q8_block`] (ggml's scalar reference, which gguf-py follows) in the last
/// bit now and then; the model's logits are sensitive enough to such flips that matching the
/// reference we test against matters.
#[inline]
fn q8_block_act(x: &[f32], qs: &mut [i8; QK32]) -> f32 {
    let amax = x
        .iter()
        .fold(0.0f32, |m, v| if v.abs() > m { v.abs() } else { m });
    let d = amax / 127.0;
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    for (&v, q) in x.iter().zip(qs.iter_mut()) {
        *q = round_even(v * id).clamp(-128, 127) as i8;
    }
    d
}

/// f32 → Q8_0 activations (llama.cpp's x86 rounding, see [`q8_block_act`]).
pub fn quantize_q8_0_act(x: &[f32], out: &mut [BlockQ8_0]) {
    for (x, b) in x.chunks_exact(QK32).zip(out.iter_mut()) {
        let d = q8_block_act(x, &mut b.qs);
        b.d = F16Le::from_f32(d);
    }
}

/// f32 → Q8_0 weights, as ggml's reference quantizer (and gguf-py): per 32, `d = max|x| / 127`,
/// `q = roundf(x / d)`.
pub fn quantize_q8_0(x: &[f32], out: &mut [BlockQ8_0]) {
    for (x, b) in x.chunks_exact(QK32).zip(out.iter_mut()) {
        let d = q8_block(x, &mut b.qs);
        b.d = F16Le::from_f32(d);
    }
}

/// f32 → Q8_1: as Q8_0, plus `s = d * sum(q)` using the f32 `d` before it is rounded to f16.
pub fn quantize_q8_1(x: &[f32], out: &mut [BlockQ8_1]) {
    for (x, b) in x.chunks_exact(QK32).zip(out.iter_mut()) {
        let d = q8_block_act(x, &mut b.qs);
        let sum: i32 = b.qs.iter().map(|&q| i32::from(q)).sum();
        b.d = F16Le::from_f32(d);
        b.s = F16Le::from_f32(sum as f32 * d);
    }
}

/// f32 → Q8_K: per 256, with `max` the value of largest magnitude, `iscale = -127 / max`,
/// `q = min(127, nearest_int(iscale * x))` (halves to even), `d = 1 / iscale`, and the sums
/// of each 16 quants in `bsums`. An all-zero block stores `d = 0`.
pub fn quantize_q8_k(x: &[f32], out: &mut [BlockQ8K]) {
    for (x, b) in x.chunks_exact(QK_K).zip(out.iter_mut()) {
        let (max, amax) = signed_absmax(x);
        if amax == 0.0 {
            b.d = F32Le::new(0.0);
            b.qs = [0; QK_K];
            b.bsums = [I16Le::new(0); QK_K / 16];
            continue;
        }
        let iscale = -127.0 / max;
        for (&v, q) in x.iter().zip(b.qs.iter_mut()) {
            *q = round_even(iscale * v).clamp(-128, 127) as i8;
        }
        for (s, qs) in b.bsums.iter_mut().zip(b.qs.chunks_exact(16)) {
            // 16 values of at most 128 in magnitude: fits i16.
            *s = I16Le::new(qs.iter().map(|&q| i16::from(q)).sum());
        }
        b.d = F32Le::new(1.0 / iscale);
    }
}

/// Packs 32 quants in 0..16 into Q4 nibbles (element `j` low, `j + 16` high).
#[inline]
fn pack_nibbles(q: &[u8; QK32], qs: &mut [u8; QK32 / 2]) {
    let (lo, hi) = q.split_at(QK32 / 2);
    for ((b, &l), &h) in qs.iter_mut().zip(lo).zip(hi) {
        *b = (l & 0x0f) | (h << 4);
    }
}

/// f32 → Q4_0 weights: `d = max / -8` with `max` the value of largest magnitude,
/// `q = min(15, trunc(x / d + 8.5))`.
pub fn quantize_q4_0(x: &[f32], out: &mut [BlockQ4_0]) {
    for (x, b) in x.chunks_exact(QK32).zip(out.iter_mut()) {
        let (max, _) = signed_absmax(x);
        let d = max / -8.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut q = [0u8; QK32];
        for (&v, q) in x.iter().zip(q.iter_mut()) {
            *q = ((v * id + 8.5) as i32).clamp(0, 15) as u8;
        }
        b.d = F16Le::from_f32(d);
        pack_nibbles(&q, &mut b.qs);
    }
}

/// f32 → Q4_1 weights: `d = (max - min) / 15`, `m = min`, `q = min(15, trunc((x - min) / d + 0.5))`.
pub fn quantize_q4_1(x: &[f32], out: &mut [BlockQ4_1]) {
    for (x, b) in x.chunks_exact(QK32).zip(out.iter_mut()) {
        let (mut min, mut max) = (f32::MAX, -f32::MAX);
        for &v in x {
            min = if v < min { v } else { min };
            max = if v > max { v } else { max };
        }
        let d = (max - min) / 15.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut q = [0u8; QK32];
        for (&v, q) in x.iter().zip(q.iter_mut()) {
            *q = (((v - min) * id + 0.5) as i32).clamp(0, 15) as u8;
        }
        b.d = F16Le::from_f32(d);
        b.m = F16Le::from_f32(min);
        pack_nibbles(&q, &mut b.qs);
    }
}

/// f32 → Q5_0 weights: `d = max / -16` with `max` the value of largest magnitude,
/// `q = min(31, trunc(x / d + 16.5))`.
pub fn quantize_q5_0(x: &[f32], out: &mut [BlockQ5_0]) {
    for (x, b) in x.chunks_exact(QK32).zip(out.iter_mut()) {
        let (max, _) = signed_absmax(x);
        let d = max / -16.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut q = [0u8; QK32];
        let mut qh = 0u32;
        for (j, (&v, q)) in x.iter().zip(q.iter_mut()).enumerate() {
            *q = ((v * id + 16.5) as i32).clamp(0, 31) as u8;
            qh |= u32::from(*q >> 4) << j;
        }
        b.d = F16Le::from_f32(d);
        b.qh = qh.to_le_bytes();
        pack_nibbles(&q, &mut b.qs);
    }
}

//! Scalar K-quant weight quantizers (Q4_K, Q5_K, Q6_K) for synthetic models and tests.
//!
//! These are simple one-pass quantizers, not ggml's iterative search, so their bytes differ
//! from llama-quantize's; every block they write decodes with the standard formulas. Scales are
//! rounded *up* (f16 and 6/8-bit codes alike), so every value of a sub-block fits its range
//! and the error of each element stays within half a quantization step (one step for the
//! single largest element of a Q6_K sub-block, as with ggml's symmetric formats).
//!
//! Same length contract as `dequant`: `x.len()` should be `out.len() * 256`.

use super::blocks::{pack_scales_mins, BlockQ4K, BlockQ5K, BlockQ6K, F16Le, QK_K};
use super::num::{f16_at_least, round_even};

/// `ceil(x / step)` clamped to `0..=max`, 0 when `step` is not positive.
#[inline]
fn code_at_least(x: f32, step: f32, max: i32) -> i32 {
    if step <= 0.0 {
        return 0;
    }
    let t = x / step;
    let c = t as i32;
    let c = if (c as f32) < t {
        c.saturating_add(1)
    } else {
        c
    };
    c.clamp(0, max)
}

/// Levels (0..=nmax) for a 256-value super-block with 8 sub-blocks of 32 and
/// `y = (d * sc) * q - (dmin * m)`; returns `(d, dmin, packed scales)`.
fn quantize_scale_min(x: &[f32], nmax: i32, levels: &mut [u8; QK_K]) -> (F16Le, F16Le, [u8; 12]) {
    let mut lo = [0.0f32; 8];
    let mut hi = [0.0f32; 8];
    for (j, sub) in x.chunks_exact(32).enumerate() {
        // The offset can only move values down (m >= 0), so the range always includes 0.
        let (mut mn, mut mx) = (0.0f32, f32::MIN);
        for &v in sub {
            mn = if v < mn { v } else { mn };
            mx = if v > mx { v } else { mx };
        }
        lo[j] = -mn;
        hi[j] = mx;
    }
    let max_min = lo.iter().fold(0.0f32, |a, &b| if b > a { b } else { a });
    let dmin = f16_at_least(max_min / 63.0);
    let dminf = dmin.to_f32();
    let mut m = [0u8; 8];
    let mut off = [0.0f32; 8];
    let mut need = [0.0f32; 8];
    for j in 0..8 {
        m[j] = code_at_least(lo[j], dminf, 63) as u8;
        off[j] = dminf * f32::from(m[j]);
        let span = hi[j] + off[j];
        need[j] = if span > 0.0 { span / nmax as f32 } else { 0.0 };
    }
    let max_need = need.iter().fold(0.0f32, |a, &b| if b > a { b } else { a });
    let d = f16_at_least(max_need / 63.0);
    let df = d.to_f32();
    let mut sc = [0u8; 8];
    for (j, (sub, ls)) in x
        .chunks_exact(32)
        .zip(levels.chunks_exact_mut(32))
        .enumerate()
    {
        sc[j] = code_at_least(need[j], df, 63) as u8;
        let ds = df * f32::from(sc[j]);
        let id = if ds > 0.0 { 1.0 / ds } else { 0.0 };
        for (&v, l) in sub.iter().zip(ls) {
            *l = round_even((v + off[j]) * id).clamp(0, nmax) as u8;
        }
    }
    (d, dmin, pack_scales_mins(&sc, &m))
}

/// f32 → Q4_K weights.
pub fn quantize_q4_k(x: &[f32], out: &mut [BlockQ4K]) {
    for (x, b) in x.chunks_exact(QK_K).zip(out.iter_mut()) {
        let mut l = [0u8; QK_K];
        (b.d, b.dmin, b.scales) = quantize_scale_min(x, 15, &mut l);
        for (qs, l) in b.qs.chunks_exact_mut(32).zip(l.chunks_exact(64)) {
            let (l1, l2) = l.split_at(32);
            for ((q, &a), &c) in qs.iter_mut().zip(l1).zip(l2) {
                *q = a | (c << 4);
            }
        }
    }
}

/// f32 → Q5_K weights.
pub fn quantize_q5_k(x: &[f32], out: &mut [BlockQ5K]) {
    for (x, b) in x.chunks_exact(QK_K).zip(out.iter_mut()) {
        let mut l = [0u8; QK_K];
        (b.d, b.dmin, b.scales) = quantize_scale_min(x, 31, &mut l);
        b.qh = [0; QK_K / 8];
        for (c, (qs, l)) in
            b.qs.chunks_exact_mut(32)
                .zip(l.chunks_exact(64))
                .enumerate()
        {
            let (l1, l2) = l.split_at(32);
            for (i, (q, (&a, &e))) in qs.iter_mut().zip(l1.iter().zip(l2)).enumerate() {
                *q = (a & 0x0f) | ((e & 0x0f) << 4);
                b.qh[i] |= ((a >> 4) << (2 * c)) | ((e >> 4) << (2 * c + 1));
            }
        }
    }
}

/// f32 → Q6_K weights: per 16, scale `max / -32` (with `max` the value of largest magnitude),
/// 8-bit scales under one f16 `d`.
pub fn quantize_q6_k(x: &[f32], out: &mut [BlockQ6K]) {
    for (x, b) in x.chunks_exact(QK_K).zip(out.iter_mut()) {
        let mut scale = [0.0f32; 16];
        for (s, sub) in scale.iter_mut().zip(x.chunks_exact(16)) {
            let (mut max, mut amax) = (0.0f32, 0.0f32);
            for &v in sub {
                if v.abs() > amax {
                    amax = v.abs();
                    max = v;
                }
            }
            *s = max / -32.0;
        }
        let amax = scale
            .iter()
            .fold(0.0f32, |a, s| if s.abs() > a { s.abs() } else { a });
        b.d = f16_at_least(amax / 127.0);
        let df = b.d.to_f32();
        let mut l = [0u8; QK_K];
        for (j, (sub, ls)) in x.chunks_exact(16).zip(l.chunks_exact_mut(16)).enumerate() {
            let code = code_at_least(scale[j].abs(), df, 127);
            let sc = if scale[j] < 0.0 { -code } else { code };
            b.scales[j] = sc as i8;
            let ds = df * sc as f32;
            let id = if ds != 0.0 { 1.0 / ds } else { 0.0 };
            for (&v, q) in sub.iter().zip(ls.iter_mut()) {
                *q = (round_even(v * id).clamp(-32, 31) + 32) as u8;
            }
        }
        for (h, l) in l.chunks_exact(128).enumerate() {
            let ql = &mut b.ql[64 * h..64 * h + 64];
            let qh = &mut b.qh[32 * h..32 * h + 32];
            for i in 0..32 {
                let (q1, q2, q3, q4) = (l[i], l[i + 32], l[i + 64], l[i + 96]);
                ql[i] = (q1 & 0x0f) | ((q3 & 0x0f) << 4);
                ql[i + 32] = (q2 & 0x0f) | ((q4 & 0x0f) << 4);
                qh[i] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
            }
        }
    }
}

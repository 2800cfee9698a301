//! Element-wise and row-wise kernels on plain slices (the CPU reference).
//!
//! Where llama.cpp's CPU backend rounds through f16 or sums in f64, these kernels do the same, so
//! the reference stays within float-summation-order distance of it.

use half::f16;

use crate::model::RopeStyle;
use crate::quant::Kernels;

/// Values per stack buffer of the vectorized element-wise ops.
const CHUNK: usize = 64;

/// `1 / sqrt(mean(x²) + eps)`, with the sum of squares taken in f64 as GGML does.
fn rms_scale(x: &[f32], eps: f32) -> f32 {
    // Eight independent f64 partial sums (one chain each, so the adds overlap and
    // vectorize), combined in a fixed tree, then the tail in order: the sum depends only on
    // the row. A single chain waits out one f64 add latency per value.
    let (body, tail) = x.as_chunks::<8>();
    let mut acc = [0.0f64; 8];
    for c in body {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += f64::from(v * v);
        }
    }
    let mut sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for &v in tail {
        sum += f64::from(v * v);
    }
    let mean = (sum / x.len().max(1) as f64) as f32;
    1.0 / libm::sqrtf(mean + eps)
}

/// `out = x / sqrt(mean(x²) + eps) · w` over one row; the sum of squares is taken in f64.
pub fn rmsnorm_row(x: &[f32], w: Option<&[f32]>, eps: f32, out: &mut [f32]) {
    let scale = rms_scale(x, eps);
    match w {
        Some(w) => {
            for ((o, &v), &g) in out.iter_mut().zip(x).zip(w) {
                *o = (v * scale) * g;
            }
        }
        None => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = v * scale;
            }
        }
    }
}

/// In-place RMSNorm of one row.
pub fn rmsnorm_row_inplace(x: &mut [f32], w: Option<&[f32]>, eps: f32) {
    let scale = rms_scale(x, eps);
    match w {
        Some(w) => {
            for (v, &g) in x.iter_mut().zip(w) {
                *v = (*v * scale) * g;
            }
        }
        None => {
            for v in x.iter_mut() {
                *v *= scale;
            }
        }
    }
}

/// Rotates the first `rope_dim` dims of one head at position `pos`.
///
/// The angle of pair `i` is `pos · base^(-2i/rope_dim)`, built by repeated multiplication in
/// f32 as GGML does.
pub fn rope_head(head: &mut [f32], rope_dim: usize, pos: u32, base: f32, style: RopeStyle) {
    let mut cs = [(0.0f32, 0.0f32); 256];
    let cs = &mut cs[..(rope_dim / 2).min(256)];
    rope_angles(rope_dim, pos, base, cs);
    rope_apply(head, cs, style);
}

/// The `(cos, sin)` of the `cs.len()` (= `rope_dim / 2`) rotation angles at `pos`: computed once
/// per position and applied to every head with [`rope_apply`].
pub fn rope_angles(rope_dim: usize, pos: u32, base: f32, cs: &mut [(f32, f32)]) {
    let theta_scale = libm::powf(base, -2.0 / rope_dim as f32);
    let mut theta = pos as f32;
    for c in cs.iter_mut() {
        *c = (libm::cosf(theta), libm::sinf(theta));
        theta *= theta_scale;
    }
}

/// Rotates the first `2 · cs.len()` dims of one head by the angles of [`rope_angles`].
pub fn rope_apply(head: &mut [f32], cs: &[(f32, f32)], style: RopeStyle) {
    let half = cs.len();
    for (i, &(c, s)) in cs.iter().enumerate() {
        let (a, b) = match style {
            RopeStyle::Interleaved => (2 * i, 2 * i + 1),
            RopeStyle::HalfSplit => (i, i + half),
        };
        let (x0, x1) = (head[a], head[b]);
        head[a] = x0 * c - x1 * s;
        head[b] = x0 * s + x1 * c;
    }
}

/// `silu(x) = x / (1 + e^-x)`.
#[inline]
pub fn silu(x: f32) -> f32 {
    x / (1.0 + libm::expf(-x))
}

/// `g = silu(g) · u` element-wise (SwiGLU), with the kernels' vectorized `exp`.
pub fn silu_mul(k: &Kernels, g: &mut [f32], u: &[f32]) {
    let mut e = [0.0f32; CHUNK];
    for (gc, uc) in g.chunks_mut(CHUNK).zip(u.chunks(CHUNK)) {
        let e = &mut e[..gc.len()];
        for (e, &x) in e.iter_mut().zip(gc.iter()) {
            *e = -x;
        }
        k.exp_f32(e);
        for ((x, &e), &u) in gc.iter_mut().zip(e.iter()).zip(uc) {
            *x = *x / (1.0 + e) * u;
        }
    }
}

/// `x *= sigmoid(g)` element-wise, with the kernels' vectorized `exp`.
pub fn sigmoid_mul(k: &Kernels, x: &mut [f32], g: &[f32]) {
    let mut e = [0.0f32; CHUNK];
    for (xc, gc) in x.chunks_mut(CHUNK).zip(g.chunks(CHUNK)) {
        let e = &mut e[..xc.len()];
        for (e, &g) in e.iter_mut().zip(gc) {
            *e = -g;
        }
        k.exp_f32(e);
        for (x, &e) in xc.iter_mut().zip(e.iter()) {
            *x *= 1.0 / (1.0 + e);
        }
    }
}

/// GELU with the tanh approximation, evaluated the way GGML's CPU backend does: on the input
/// rounded to f16, with the result rounded to f16 (GGML reads it from an f16 table).
#[inline]
pub fn gelu_tanh_f16(x: f32) -> f32 {
    if x <= -10.0 {
        return 0.0;
    }
    if x >= 10.0 {
        return x;
    }
    let xh = f16::from_f32(x).to_f32();
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    const COEF_A: f32 = 0.044_715;
    let y = 0.5 * xh * (1.0 + libm::tanhf(SQRT_2_OVER_PI * xh * (1.0 + COEF_A * xh * xh)));
    f16::from_f32(y).to_f32()
}

/// `g = gelu_tanh(g) · u` element-wise, as [`gelu_tanh_f16`] evaluates GELU but with the
/// kernels' vectorized `exp` (`tanh(z) = 1 - 2 / (e^{2z} + 1)`): the GELU value is rounded to
/// f16 as GGML's table does, and agrees with [`gelu_tanh_f16`] to within one f16 step (or
/// 1e-6 where GELU is that small and `1 + tanh z` cancels in the scalar form).
pub fn gelu_mul(k: &Kernels, g: &mut [f32], u: &[f32]) {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    const COEF_A: f32 = 0.044_715;
    let mut e = [0.0f32; CHUNK];
    let mut xh = [0.0f32; CHUNK];
    // Each pass is element-wise and branch-free, and the f16 roundings go through the
    // kernels' vectorized `scale_round_f16` (`x · 1` is `x`: the rounding alone).
    for (gc, uc) in g.chunks_mut(CHUNK).zip(u.chunks(CHUNK)) {
        let n = gc.len();
        let (e, xh) = (&mut e[..n], &mut xh[..n]);
        xh.copy_from_slice(gc);
        k.scale_round_f16(xh, 1.0);
        for (e, &h) in e.iter_mut().zip(xh.iter()) {
            // 2z, clamped so that e^{2z} stays finite (tanh is 1 to f32 precision long before).
            *e = (2.0 * SQRT_2_OVER_PI * h * (1.0 + COEF_A * h * h)).min(80.0);
        }
        k.exp_f32(e);
        // 0.5 · h · (1 + tanh z) = h · e^{2z} / (e^{2z} + 1), rounded to f16.
        for (e, &h) in e.iter_mut().zip(xh.iter()) {
            *e = h * (*e / (*e + 1.0));
        }
        k.scale_round_f16(e, 1.0);
        for ((x, &y), &u) in gc.iter_mut().zip(e.iter()).zip(uc) {
            let y = if *x <= -10.0 {
                0.0
            } else if *x >= 10.0 {
                *x
            } else {
                y
            };
            *x = y * u;
        }
    }
}

/// Numerically stable softmax in place; the normalizer is summed in f64. (A plain reference:
/// attention runs its own blocked softmax with the kernels' `exp`.)
pub fn softmax(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f64;
    for v in x.iter_mut() {
        let e = if *v == f32::NEG_INFINITY {
            0.0
        } else {
            libm::expf(*v - max)
        };
        *v = e;
        sum += e as f64;
    }
    let inv = (1.0 / sum) as f32;
    for v in x.iter_mut() {
        *v *= inv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmsnorm_unit_rms() {
        let x = [3.0f32, -4.0, 0.0, 5.0];
        let mut out = [0.0f32; 4];
        rmsnorm_row(&x, None, 0.0, &mut out);
        let ms: f32 = out.iter().map(|v| v * v).sum::<f32>() / 4.0;
        assert!((ms - 1.0).abs() < 1e-6, "{ms}");
    }

    #[test]
    fn rope_pos0_is_identity_and_preserves_norm() {
        let mut h = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let orig = h;
        rope_head(&mut h, 4, 0, 10000.0, RopeStyle::Interleaved);
        assert_eq!(h, orig);
        rope_head(&mut h, 4, 7, 10000.0, RopeStyle::HalfSplit);
        let n0: f32 = orig[..4].iter().map(|v| v * v).sum();
        let n1: f32 = h[..4].iter().map(|v| v * v).sum();
        assert!((n0 - n1).abs() < 1e-4);
        assert_eq!(h[4..], orig[4..]);
    }

    #[test]
    fn vectorized_gelu_is_within_one_f16_step_of_the_scalar_one() {
        extern crate std;
        let k = Kernels::select(crate::quant::simd::tests::detected());
        let n = 4001;
        let g: std::vec::Vec<f32> = (0..n).map(|i| -12.0 + 24.0 * i as f32 / n as f32).collect();
        let u: std::vec::Vec<f32> = (0..n).map(|i| 1.0 + (i % 7) as f32 * 0.25).collect();
        let mut got = g.clone();
        gelu_mul(&k, &mut got, &u);
        for ((&x, &y), &uu) in g.iter().zip(&got).zip(&u) {
            let want = gelu_tanh_f16(x);
            let step = (f16::from_f32(want).to_f32()
                - f16::from_bits(f16::from_f32(want).to_bits() + 1).to_f32())
            .abs();
            // Below ~1e-6 the scalar form loses digits to `1 + tanh z` cancelling; the
            // vectorized `e / (e + 1)` does not, so there the bound is absolute.
            assert!(
                (y / uu - want).abs() <= step.max(1e-6),
                "x {x}: {} vs {want}",
                y / uu
            );
        }
    }

    #[test]
    fn softmax_sums_to_one_and_masks() {
        let mut x = [1.0f32, 2.0, f32::NEG_INFINITY, 0.5];
        softmax(&mut x);
        assert_eq!(x[2], 0.0);
        assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(x[1] > x[0] && x[0] > x[3]);
    }

    #[test]
    fn vectorized_gates_match_libm() {
        extern crate std;
        let k = Kernels::select(crate::quant::simd::tests::detected());
        let g: std::vec::Vec<f32> = (0..300).map(|i| (i as f32 - 150.0) * 0.37).collect();
        let u: std::vec::Vec<f32> = (0..300).map(|i| 1.0 + i as f32 * 0.01).collect();
        let mut s = g.clone();
        silu_mul(&k, &mut s, &u);
        let mut x = u.clone();
        sigmoid_mul(&k, &mut x, &g);
        for i in 0..300 {
            let want = silu(g[i]) * u[i];
            assert!((s[i] - want).abs() <= 4e-7 * want.abs() + 1e-30, "{i}");
            let want = u[i] / (1.0 + libm::expf(-g[i]));
            assert!((x[i] - want).abs() <= 4e-7 * want.abs(), "{i}");
        }
    }

    #[test]
    fn gelu_matches_reference_points() {
        assert_eq!(gelu_tanh_f16(-20.0), 0.0);
        assert_eq!(gelu_tanh_f16(12.0), 12.0);
        assert!((gelu_tanh_f16(1.0) - 0.8412).abs() < 1e-3);
        assert!((silu(1.0) - 0.731_058_6).abs() < 1e-6);
    }
}

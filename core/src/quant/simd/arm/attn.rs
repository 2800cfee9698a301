//! NEON attention kernels: score tiles (f16 keys × f32 queries), value tiles (weights × f16
//! values into f32 outputs) and the softmax's `exp`, on 4-lane vectors.
//!
//! As on x86, every score is one chain of fused multiply-adds over 4-wide chunks reduced by
//! one pairwise add across the lanes (so it does not depend on its tile), and every output
//! value is updated row by row with a fused multiply-add. f16 ↔ f32 conversions are
//! `fcvtl` / `fcvtn` (base AArch64 SIMD), written with `asm!` because the intrinsics need the
//! unstable `f16` type.

// The register tiles index several const-size arrays in lockstep.
#![allow(clippy::needless_range_loop)]

use core::arch::aarch64::*;
use core::arch::asm;

use half::f16;

use super::super::attn::{AttnKernels, F16Rows};
use super::super::exp::{C2, C3, C4, C5, C6, LN2_HI, LN2_LO, LOG2E, X_MAX, X_MIN};
use super::super::Isa;
use super::neon::{f16x4_to_f32, ld4f};

/// The NEON table.
pub(super) const NEON: AttnKernels = AttnKernels {
    dot_tile: dot_f16_tile,
    axpy_tile: axpy_f16_tile,
    exp: exp_f32,
    exp_sum: exp_sum_f32,
    scale_round: scale_round_f16,
    isa: Isa::Neon,
};

/// Four f16 bit patterns widened to f32 (exact).
#[target_feature(enable = "neon")]
#[inline]
fn cvt4(h: &[u16; 4]) -> float32x4_t {
    // SAFETY: reads exactly the 8 bytes of `h`; `vld1` has no alignment requirement.
    f16x4_to_f32(unsafe { vld1_u16(h.as_ptr()) })
}

/// Four lanes into `x`.
#[target_feature(enable = "neon")]
#[inline]
fn st4f(x: &mut [f32; 4], v: float32x4_t) {
    // SAFETY: writes exactly the 16 bytes of `x`; `vst1q` has no alignment requirement.
    unsafe { vst1q_f32(x.as_mut_ptr(), v) }
}

/// Four f32s rounded to f16 (to nearest even) and widened back.
#[target_feature(enable = "neon")]
#[inline]
fn round_f16(v: float32x4_t) -> float32x4_t {
    let h: uint16x4_t;
    // SAFETY: `fcvtn` only reads and writes the named vector registers.
    unsafe {
        asm!(
            "fcvtn {o:v}.4h, {i:v}.4s",
            o = lateout(vreg) h,
            i = in(vreg) v,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    f16x4_to_f32(h)
}

/// The scores of `KT` key rows (from `j`) against `QT` queries.
#[target_feature(enable = "neon")]
#[inline]
fn tile<const KT: usize, const QT: usize>(
    k: &F16Rows<'_>,
    j: usize,
    q: &[f32],
    out: &mut [f32],
    o_stride: usize,
) {
    let d = k.width;
    let n4 = d / 4;
    let mut kr: [&[[u16; 4]]; KT] = [&[]; KT];
    let mut kt: [&[u16]; KT] = [&[]; KT];
    for t in 0..KT {
        (kr[t], kt[t]) = k.data[(j + t) * k.stride..][..d].as_chunks::<4>();
    }
    let mut qr: [&[[f32; 4]]; QT] = [&[]; QT];
    let mut qt: [&[f32]; QT] = [&[]; QT];
    for u in 0..QT {
        (qr[u], qt[u]) = q[u * d..][..d].as_chunks::<4>();
    }
    let mut acc = [[vdupq_n_f32(0.0); QT]; KT];
    for c in 0..n4 {
        let mut kv = [vdupq_n_f32(0.0); KT];
        for t in 0..KT {
            kv[t] = cvt4(&kr[t][c]);
        }
        for u in 0..QT {
            let qv = ld4f(&qr[u][c]);
            for t in 0..KT {
                acc[t][u] = vfmaq_f32(acc[t][u], kv[t], qv);
            }
        }
    }
    for t in 0..KT {
        for u in 0..QT {
            let mut s = vaddvq_f32(acc[t][u]);
            for (&kb, &qv) in kt[t].iter().zip(qt[u]) {
                s += f16::from_bits(kb).to_f32() * qv;
            }
            out[u * o_stride + j + t] = s;
        }
    }
}

/// Every key row against `QT` queries, four rows at a time.
#[target_feature(enable = "neon")]
#[inline]
fn queries<const QT: usize>(k: &F16Rows<'_>, q: &[f32], out: &mut [f32], o_stride: usize) {
    let mut j = 0;
    while j + 4 <= k.rows {
        tile::<4, QT>(k, j, q, out, o_stride);
        j += 4;
    }
    while j < k.rows {
        tile::<1, QT>(k, j, q, out, o_stride);
        j += 1;
    }
}

/// See `DotTileFn`.
#[target_feature(enable = "neon")]
pub(super) fn dot_f16_tile(k: F16Rows<'_>, q: &[f32], out: &mut [f32], o_stride: usize) {
    let d = k.width;
    if d == 0 {
        return;
    }
    let nq = q.len() / d;
    let mut i = 0;
    while i < nq {
        let (qs, os) = (&q[i * d..], &mut out[i * o_stride..]);
        let step = (nq - i).min(4);
        match step {
            1 => queries::<1>(&k, qs, os, o_stride),
            2 => queries::<2>(&k, qs, os, o_stride),
            3 => queries::<3>(&k, qs, os, o_stride),
            _ => queries::<4>(&k, qs, os, o_stride),
        }
        i += step;
    }
}

/// `OT` outputs over columns `c0..c0 + 4·CT` of every row.
#[target_feature(enable = "neon")]
#[inline]
fn vcols<const OT: usize, const CT: usize>(
    v: &F16Rows<'_>,
    w: [&[f32]; OT],
    c0: usize,
    out: &mut [f32],
    o_stride: usize,
) {
    let mut acc = [[vdupq_n_f32(0.0); CT]; OT];
    for o in 0..OT {
        let (row, _) = out[o * o_stride + c0..][..4 * CT].as_chunks::<4>();
        for c in 0..CT {
            acc[o][c] = ld4f(&row[c]);
        }
    }
    for j in 0..v.rows {
        let (row, _) = v.data[j * v.stride + c0..][..4 * CT].as_chunks::<4>();
        let mut vv = [vdupq_n_f32(0.0); CT];
        for c in 0..CT {
            vv[c] = cvt4(&row[c]);
        }
        for o in 0..OT {
            let wj = w[o][j];
            for c in 0..CT {
                acc[o][c] = vfmaq_n_f32(acc[o][c], vv[c], wj);
            }
        }
    }
    for o in 0..OT {
        let (row, _) = out[o * o_stride + c0..][..4 * CT].as_chunks_mut::<4>();
        for c in 0..CT {
            st4f(&mut row[c], acc[o][c]);
        }
    }
}

/// `OT` outputs over every column: 16 at a time, then 4, then one by one.
#[target_feature(enable = "neon")]
#[inline]
fn outputs<const OT: usize>(v: &F16Rows<'_>, w: [&[f32]; OT], out: &mut [f32], o_stride: usize) {
    let width = v.width;
    let mut c0 = 0;
    while c0 + 16 <= width {
        vcols::<OT, 4>(v, w, c0, out, o_stride);
        c0 += 16;
    }
    while c0 + 4 <= width {
        vcols::<OT, 1>(v, w, c0, out, o_stride);
        c0 += 4;
    }
    if c0 < width {
        for (o, wo) in w.iter().enumerate() {
            let dst = &mut out[o * o_stride + c0..o * o_stride + width];
            for (j, &wj) in wo.iter().enumerate().take(v.rows) {
                let src = &v.data[j * v.stride + c0..j * v.stride + width];
                for (d, &s) in dst.iter_mut().zip(src) {
                    *d += wj * f16::from_bits(s).to_f32();
                }
            }
        }
    }
}

/// See `AxpyTileFn`.
#[target_feature(enable = "neon")]
pub(super) fn axpy_f16_tile(
    v: F16Rows<'_>,
    w: &[f32],
    w_stride: usize,
    out: &mut [f32],
    o_stride: usize,
    n: usize,
) {
    let wrow = |i: usize| &w[i * w_stride..][..v.rows];
    let mut i = 0;
    while i < n {
        let os = &mut out[i * o_stride..];
        let step = (n - i).min(4);
        match step {
            1 => outputs::<1>(&v, [wrow(i)], os, o_stride),
            2 => outputs::<2>(&v, [wrow(i), wrow(i + 1)], os, o_stride),
            3 => outputs::<3>(&v, [wrow(i), wrow(i + 1), wrow(i + 2)], os, o_stride),
            _ => {
                let ws = [wrow(i), wrow(i + 1), wrow(i + 2), wrow(i + 3)];
                outputs::<4>(&v, ws, os, o_stride);
            }
        }
        i += step;
    }
}

/// `e^x` on four lanes (see `quant::simd::exp`).
#[target_feature(enable = "neon")]
#[inline]
fn exp4(x: float32x4_t) -> float32x4_t {
    // `fmax` / `fmin` return NaN when either operand is NaN: NaN goes through.
    let x = vmaxq_f32(x, vdupq_n_f32(X_MIN));
    let x = vminq_f32(x, vdupq_n_f32(X_MAX));
    let n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(LOG2E)));
    let r = vfmsq_f32(x, n, vdupq_n_f32(LN2_HI));
    let r = vfmsq_f32(r, n, vdupq_n_f32(LN2_LO));
    let q = vfmaq_f32(vdupq_n_f32(C5), vdupq_n_f32(C6), r);
    let q = vfmaq_f32(vdupq_n_f32(C4), q, r);
    let q = vfmaq_f32(vdupq_n_f32(C3), q, r);
    let q = vfmaq_f32(vdupq_n_f32(C2), q, r);
    let t = vfmaq_f32(r, vmulq_f32(r, r), q);
    let p = vaddq_f32(t, vdupq_n_f32(1.0));
    let ni = vcvtq_s32_f32(n);
    let e1 = vshrq_n_s32::<1>(ni);
    let e2 = vsubq_s32(ni, e1);
    let bias = vdupq_n_s32(127);
    let s1 = vreinterpretq_f32_s32(vshlq_n_s32::<23>(vaddq_s32(e1, bias)));
    let s2 = vreinterpretq_f32_s32(vshlq_n_s32::<23>(vaddq_s32(e2, bias)));
    vmulq_f32(vmulq_f32(p, s1), s2)
}

/// Applies `f` to `x` four lanes at a time; the tail goes through `f` in a buffer padded
/// with `pad`, so every element is computed the same way.
#[target_feature(enable = "neon")]
#[inline]
fn map4(x: &mut [f32], pad: f32, mut f: impl FnMut(float32x4_t) -> float32x4_t) {
    let (body, tail) = x.as_chunks_mut::<4>();
    for c in body {
        let r = f(ld4f(c));
        st4f(c, r);
    }
    if !tail.is_empty() {
        let mut buf = [pad; 4];
        let n = tail.len();
        buf[..n].copy_from_slice(tail);
        let r = f(ld4f(&buf));
        st4f(&mut buf, r);
        tail.copy_from_slice(&buf[..n]);
    }
}

/// See `ExpFn`.
#[target_feature(enable = "neon")]
pub(super) fn exp_f32(x: &mut [f32]) {
    map4(x, 0.0, |v| exp4(v));
}

/// See `ExpSumFn`: lane sums, then one pairwise add across the lanes.
#[target_feature(enable = "neon")]
pub(super) fn exp_sum_f32(x: &mut [f32], m: f32) -> f32 {
    let mv = vdupq_n_f32(m);
    let mut acc = vdupq_n_f32(0.0);
    // Padding lanes are -inf: e^-inf = 0 adds nothing.
    map4(x, f32::NEG_INFINITY, |v| {
        let e = exp4(vsubq_f32(v, mv));
        acc = vaddq_f32(acc, e);
        e
    });
    vaddvq_f32(acc)
}

/// See `ScaleRoundFn`.
#[target_feature(enable = "neon")]
pub(super) fn scale_round_f16(x: &mut [f32], s: f32) {
    let sv = vdupq_n_f32(s);
    map4(x, 0.0, |v| round_f16(vmulq_f32(v, sv)));
}

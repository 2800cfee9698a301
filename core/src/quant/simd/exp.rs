//! `e^x` in f32 by range reduction and a polynomial: the portable version and the constants
//! every SIMD version shares.
//!
//! `x = n·ln 2 + r` with `n = round(x·log2 e)` and `|r| ≤ ln 2 / 2`; `e^r` is the degree-6
//! polynomial `1 + r + r²·(c2 + r·(c3 + r·(c4 + r·(c5 + r·c6))))` (coefficients fitted for
//! the least maximum relative error on that interval, 4e-9 before rounding), and
//! `e^x = e^r · 2^n`. `ln 2` is split in two (Cody–Waite) so that `n·LN2_HI` is exact.
//! `2^n` is applied as two powers of two, `2^⌊n/2⌋ · 2^(n-⌊n/2⌋)`, so that results down to
//! the subnormals and up to `f32::MAX` come out right: inputs are clamped to
//! `[X_MIN, X_MAX]`, below which `e^x` rounds to 0 and above which it is `+inf`.
//!
//! `exp(0) = 1` exactly, `exp(-inf) = 0`, `exp(+inf) = +inf`, `exp(NaN) = NaN`. On normal
//! results every version (the SIMD ones with fused multiply-adds, the portable one with
//! separate multiplies and adds) is within 1.2e-7 relative of the exact value: 8.4e-8 at
//! worst over the tests' sweep, where libm's `expf` reaches 6.7e-8.

/// `log2(e)`.
pub(super) const LOG2E: f32 = core::f32::consts::LOG2_E;
/// High part of `ln 2` (16 significant bits, so `n · LN2_HI` is exact for `|n| < 256`).
pub(super) const LN2_HI: f32 = 0.693_145_75;
/// `ln 2 - LN2_HI`.
pub(super) const LN2_LO: f32 = 1.428_606_8e-6;
/// Polynomial coefficients of `r²` … `r⁶`.
pub(super) const C2: f32 = f32::from_bits(0x3eff_fffe);
/// See [`C2`].
pub(super) const C3: f32 = f32::from_bits(0x3e2a_aa49);
/// See [`C2`].
pub(super) const C4: f32 = f32::from_bits(0x3d2a_ac79);
/// See [`C2`].
pub(super) const C5: f32 = f32::from_bits(0x3c09_1cf9);
/// See [`C2`].
pub(super) const C6: f32 = f32::from_bits(0x3ab5_120d);
/// Inputs are clamped to this from below: `e^-104` is below half the smallest subnormal.
pub(super) const X_MIN: f32 = -104.0;
/// Inputs are clamped to this from above: `e^88.8` overflows to `+inf`.
pub(super) const X_MAX: f32 = 88.8;

/// `1.5 · 2^23`: adding and subtracting it rounds an f32 below `2^22` to the nearest integer.
const ROUNDER: f32 = 12_582_912.0;

/// `2^e` for `-126 ≤ e ≤ 127`.
#[inline(always)]
fn pow2i(e: i32) -> f32 {
    f32::from_bits(((e + 127) as u32) << 23)
}

/// `e^x`, portable (no fused multiply-add): within 1.2e-7 relative of the exact value on
/// normal results, gradual underflow to 0 (below about -103.9) and `+inf` above about 88.72;
/// `exp(0) = 1` exactly and NaN stays NaN. [`Kernels::exp_f32`](super::Kernels::exp_f32) is
/// the vectorized form.
#[inline]
pub fn exp_f32(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    let x = x.clamp(X_MIN, X_MAX);
    let n = (x * LOG2E + ROUNDER) - ROUNDER;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let q = C2 + r * (C3 + r * (C4 + r * (C5 + r * C6)));
    let p = 1.0 + (r + (r * r) * q);
    let ni = n as i32;
    let e1 = ni >> 1;
    (p * pow2i(e1)) * pow2i(ni - e1)
}

//! The pieces of the softmax both schedules share, so that they give the same bits.

use crate::plan::KvType;
use crate::quant::Kernels;

use super::BLOCK;

/// The largest value (`-inf` for none; NaN is skipped).
pub(super) fn max(x: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let (body, tail) = x.as_chunks::<8>();
    for c in body {
        for (m, &v) in lanes.iter_mut().zip(c) {
            *m = if v > *m { v } else { *m };
        }
    }
    let mut m = f32::NEG_INFINITY;
    for &v in lanes.iter().chain(tail) {
        m = if v > m { v } else { m };
    }
    m
}

/// The ranges of `0..len` cut where `base + i` is a multiple of [`BLOCK`].
pub(super) fn blocks(base: usize, len: usize) -> impl Iterator<Item = core::ops::Range<usize>> {
    let head = (BLOCK - base % BLOCK) % BLOCK;
    let first = if head == 0 || len == 0 {
        None
    } else {
        Some(0..head.min(len))
    };
    let rest = (head.min(len)..len)
        .step_by(BLOCK)
        .map(move |a| a..(a + BLOCK).min(len));
    first.into_iter().chain(rest)
}

/// The weights from the numerators `e` (in place): `e · inv`, rounded to f16 for an f16
/// cache.
pub(super) fn weights(k: &Kernels, ty: KvType, e: &mut [f32], inv: f32) {
    match ty {
        KvType::F16 => k.scale_round_f16(e, inv),
        KvType::Q8_0 => {
            for v in e {
                *v *= inv;
            }
        }
    }
}

/// `1 / sum`, from the block sums added in order in f64.
pub(super) fn inv_sum(sums: impl Iterator<Item = f32>) -> f32 {
    let s: f64 = sums.fold(0.0, |a, b| a + f64::from(b));
    (1.0 / s) as f32
}

/// Softmax weights of one row of scaled scores in place: `x[i]` is position `base + i`.
pub(super) fn row(k: &Kernels, ty: KvType, x: &mut [f32], base: usize) {
    let m = max(x);
    let mut s = 0.0f64;
    for r in blocks(base, x.len()) {
        s += f64::from(k.exp_sum_f32(&mut x[r], m));
    }
    weights(k, ty, x, (1.0 / s) as f32);
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;

    #[test]
    fn blocks_cut_at_absolute_multiples() {
        let cut = |b, n| blocks(b, n).map(|r| (r.start, r.end)).collect::<Vec<_>>();
        assert_eq!(cut(0, 130), [(0, 64), (64, 128), (128, 130)]);
        assert_eq!(cut(60, 10), [(0, 4), (4, 10)]);
        assert_eq!(cut(60, 3), [(0, 3)]);
        assert_eq!(cut(64, 64), [(0, 64)]);
        assert_eq!(cut(5, 0), []);
        assert_eq!(
            max(&[1.0, f32::NAN, 3.0, -2.0, 0.0, 2.0, 1.0, 1.0, 2.5]),
            3.0
        );
        assert_eq!(max(&[]), f32::NEG_INFINITY);
    }
}

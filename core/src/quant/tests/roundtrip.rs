//! quantize → dequantize round trips, each element held to the error its format allows.

use std::vec::Vec;

use super::*;

/// Largest magnitude in `x`.
fn amax(x: &[f32]) -> f32 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// Checks `|y - x| <= bound(block)` block by block; returns the worst error / bound ratio.
fn check(ty: GgmlType, x: &[f32], block: usize, bound: impl Fn(&[f32]) -> Vec<f32>) -> f32 {
    let y = deq(ty, &quant_w(ty, x), x.len());
    let mut worst = 0.0f32;
    for (i, (xb, yb)) in x.chunks(block).zip(y.chunks(block)).enumerate() {
        let lims = bound(xb);
        for (j, ((&a, &c), &lim)) in xb.iter().zip(yb).zip(&lims).enumerate() {
            let err = (a - c).abs();
            assert!(
                err <= lim,
                "{}: block {i} elem {j}: x={a} y={c} err={err} > {lim}",
                ty.name()
            );
            if lim > 0.0 {
                worst = worst.max(err / lim);
            }
        }
    }
    std::println!("{}: max err/bound = {worst:.3}", ty.name());
    worst
}

/// Worst error of storing `v` as f16: half an ulp, normal or subnormal.
fn f16_err(v: f32) -> f32 {
    v.abs() / 2048.0 + 3e-8
}

fn same(v: f32, n: usize) -> Vec<f32> {
    std::vec![v; n]
}

#[test]
fn float_formats_round_trip() {
    let x = Rng::new(1).data(4096);
    assert_eq!(deq(GgmlType::F32, &quant_w(GgmlType::F32, &x), x.len()), x);
    check(GgmlType::F16, &x, 1, |b| {
        same(b[0].abs() / 2048.0 + 3e-8, 1)
    });
    check(GgmlType::BF16, &x, 1, |b| same(b[0].abs() / 256.0, 1));
}

#[test]
fn q8_0_round_trip() {
    let x = Rng::new(2).data(4096);
    // Half a step, plus the f16 rounding of d times up to 127 steps.
    let bound = |b: &[f32]| {
        let d = amax(b) / 127.0;
        same((0.5 * d + 127.0 * f16_err(d)) * 1.01, 32)
    };
    check(GgmlType::Q8_0, &x, 32, bound);
}

#[test]
fn q4_0_and_q5_0_round_trip() {
    let x = Rng::new(3).data(4096);
    // One whole step: the value opposite the block maximum clips from +8 to +7 (+16 to +15).
    for (ty, levels) in [(GgmlType::Q4_0, 8.0), (GgmlType::Q5_0, 16.0)] {
        check(ty, &x, 32, |b| {
            let d = amax(b) / levels;
            same((d + levels * f16_err(d)) * 1.01, 32)
        });
    }
}

#[test]
fn q4_1_round_trip() {
    let x = Rng::new(4).data(4096);
    check(GgmlType::Q4_1, &x, 32, |b| {
        let (lo, hi) = b
            .iter()
            .fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
        let d = (hi - lo) / 15.0;
        same((0.5 * d + 15.0 * f16_err(d) + f16_err(lo)) * 1.01, 32)
    });
}

/// The Q4_K / Q5_K bound: half a step of the sub-block, where the step is its span (including
/// 0, plus one min step) over `nmax`, rounded up by one step of the super-block scale.
fn kmin_bound(b: &[f32], nmax: f32) -> Vec<f32> {
    let span = |s: &[f32]| {
        let lo = s.iter().fold(0.0f32, |m, &v| m.min(v));
        let hi = s.iter().fold(f32::MIN, |m, &v| m.max(v));
        (hi - lo, -lo)
    };
    let max_lo = b.chunks(32).map(|s| span(s).1).fold(0.0f32, f32::max);
    let dmin_step = max_lo / 63.0 * 1.001;
    let max_need = b
        .chunks(32)
        .map(|s| (span(s).0 + dmin_step) / nmax)
        .fold(0.0f32, f32::max);
    let mut out = Vec::new();
    for s in b.chunks(32) {
        let ds = (span(s).0 + dmin_step) / nmax + max_need / 63.0 * 1.001;
        out.extend(same(0.5 * ds * 1.01 + 1e-7, 32));
    }
    out
}

#[test]
fn q4_k_and_q5_k_round_trip() {
    let x = Rng::new(5).data(8192);
    check(GgmlType::Q4_K, &x, 256, |b| kmin_bound(b, 15.0));
    check(GgmlType::Q5_K, &x, 256, |b| kmin_bound(b, 31.0));
}

#[test]
fn q6_k_round_trip() {
    let x = Rng::new(6).data(8192);
    check(GgmlType::Q6_K, &x, 256, |b| {
        let top = amax(b);
        b.chunks(16)
            .flat_map(|s| same((amax(s) + top / 127.0) / 32.0 * 1.01, 16))
            .collect()
    });
}

#[test]
fn q8_k_and_q8_1_activation_round_trip() {
    let x = Rng::new(7).data(4096);
    let y = deq(GgmlType::Q8_K, &quant_a(GgmlType::Q8_K, &x), x.len());
    for (xb, yb) in x.chunks(256).zip(y.chunks(256)) {
        let lim = amax(xb) / 127.0 * 0.5001;
        for (a, c) in xb.iter().zip(yb) {
            assert!((a - c).abs() <= lim, "q8_K: x={a} y={c} > {lim}");
        }
    }
    let y = deq(GgmlType::Q8_1, &quant_a(GgmlType::Q8_1, &x), x.len());
    for (xb, yb) in x.chunks(32).zip(y.chunks(32)) {
        let d = amax(xb) / 127.0;
        let lim = (0.5 * d + 127.0 * f16_err(d)) * 1.01;
        for (a, c) in xb.iter().zip(yb) {
            assert!((a - c).abs() <= lim, "q8_1: x={a} y={c} > {lim}");
        }
    }
}

#[test]
fn zeros_stay_zero() {
    let x = std::vec![0.0f32; 512];
    for ty in WEIGHT_TYPES {
        if ty == GgmlType::Q8_K {
            continue;
        }
        assert!(
            deq(ty, &quant_w(ty, &x), 512).iter().all(|&v| v == 0.0),
            "{}",
            ty.name()
        );
    }
    for ty in [GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K] {
        let q = quant_a(ty, &x);
        assert!(deq(ty, &q, 512).iter().all(|&v| v == 0.0), "{}", ty.name());
    }
}

//! The attention kernels: `exp` against the exact value, the tiles against a straightforward
//! f64 reference, and the determinism contract of `quant::simd::attn` (a result does not
//! depend on the tile it was computed in).

extern crate std;

use std::vec;
use std::vec::Vec;

use super::super::super::tests::Rng;
use super::super::*;
use super::detected;

/// One kernel table per distinct attention tier the CPU running the tests has, scalar first.
fn attn_tiers() -> Vec<Kernels> {
    let full = detected();
    let present: Vec<Feature> = Feature::ALL.into_iter().filter(|&x| full.has(x)).collect();
    let mut out = vec![Kernels::scalar()];
    for mask in 0u32..(1 << present.len()) {
        let mut f = full;
        for (i, &feat) in present.iter().enumerate() {
            if mask & (1 << i) != 0 {
                f = f.without(feat);
            }
        }
        let k = Kernels::select(f);
        if out.iter().all(|o| o.attn_isa() != k.attn_isa()) {
            out.push(k);
        }
    }
    let names: Vec<&str> = out.iter().map(|k| k.attn_isa().name()).collect();
    std::println!("attention tiers: {names:?}");
    out
}

fn halves(x: &[f32]) -> Vec<u16> {
    x.iter()
        .map(|&v| half::f16::from_f32(v).to_bits())
        .collect()
}

fn h(b: u16) -> f64 {
    f64::from(half::f16::from_bits(b).to_f32())
}

/// Worst relative error of `exp_f32` over normal results, sweeping `[-87.3, 88.7]`.
fn exp_worst(k: &Kernels) -> (f64, f32) {
    let (lo, hi) = (-87.3f32, 88.72f32);
    let n = 1 << 21;
    let mut xs: Vec<f32> = (0..n)
        .map(|i| lo + (hi - lo) * (i as f32 / n as f32))
        .collect();
    // Around 0 and the reduction boundaries, densely.
    let mut rng = Rng::new(0xe4);
    for _ in 0..(1 << 18) {
        xs.push(rng.uniform() * 0.75);
    }
    let mut ys = xs.clone();
    k.exp_f32(&mut ys);
    let mut worst = (0.0f64, 0.0f32);
    for (&x, &y) in xs.iter().zip(&ys) {
        let want = f64::from(x).exp();
        let rel = ((f64::from(y) - want) / want).abs();
        if rel > worst.0 {
            worst = (rel, x);
        }
    }
    worst
}

#[test]
fn exp_matches_the_exact_value() {
    for k in attn_tiers() {
        let (rel, at) = exp_worst(&k);
        std::println!("{}: exp max rel err {rel:.3e} at {at}", k.attn_isa());
        // 8.4e-8 measured (one ulp is 6e-8 to 1.2e-7 relative).
        assert!(rel <= 1.2e-7, "{} rel {rel} at {at}", k.attn_isa());
        let mut sp = [
            0.0f32,
            -0.0,
            f32::NEG_INFINITY,
            f32::INFINITY,
            f32::NAN,
            88.73,
            1e30,
            -1e30,
            -104.0,
            -88.0,
            -95.0,
            -103.0,
            88.72,
        ];
        k.exp_f32(&mut sp);
        assert_eq!(sp[0], 1.0);
        assert_eq!(sp[1], 1.0);
        assert_eq!(sp[2], 0.0);
        assert_eq!(sp[3], f32::INFINITY);
        assert!(sp[4].is_nan());
        assert_eq!(sp[5], f32::INFINITY);
        assert_eq!(sp[6], f32::INFINITY);
        assert_eq!(sp[7], 0.0);
        assert_eq!(sp[8], 0.0);
        // Subnormal results: within one unit of the smallest subnormal, and ordered.
        for (x, y) in [(-88.0f64, sp[9]), (-95.0, sp[10]), (-103.0, sp[11])] {
            let err = (f64::from(y) - x.exp()).abs();
            assert!(err <= 1.5e-45 + 3e-7 * x.exp(), "{x}: {y}");
        }
        assert!(sp[12].is_finite() && sp[12] > 3.3e38, "{}", sp[12]);
        // libm for reference: same order of error.
        let lm = (0..1000)
            .map(|i| -80.0 + 0.16 * i as f32)
            .map(|x| ((f64::from(libm::expf(x)) - f64::from(x).exp()) / f64::from(x).exp()).abs())
            .fold(0.0, f64::max);
        std::println!("libm expf max rel err on a grid: {lm:.3e}");
    }
}

#[test]
fn exp_sum_and_scale_round_match_elementwise() {
    let mut rng = Rng::new(0x5f7);
    for k in attn_tiers() {
        for n in 0..70usize {
            let x: Vec<f32> = (0..n).map(|_| rng.uniform() * 12.0).collect();
            let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut e = x.clone();
            let sum = k.exp_sum_f32(&mut e, m);
            let mut want: Vec<f32> = x.iter().map(|&v| v - m).collect();
            k.exp_f32(&mut want);
            assert_eq!(e, want, "{} n {n}", k.attn_isa());
            let s64: f64 = want.iter().map(|&v| f64::from(v)).sum();
            assert!(
                (f64::from(sum) - s64).abs() <= 1e-6 * s64.max(1.0),
                "{} n {n}: {sum} {s64}",
                k.attn_isa()
            );
            // The same slice gives the same sum, wherever it sits in memory.
            let mut shifted = vec![0.0f32; n + 3];
            shifted[3..].copy_from_slice(&x);
            assert_eq!(k.exp_sum_f32(&mut shifted[3..], m).to_bits(), sum.to_bits());
            let mut r = x.clone();
            k.scale_round_f16(&mut r, 0.37);
            for (&a, &b) in r.iter().zip(&x) {
                assert_eq!(
                    a.to_bits(),
                    half::f16::from_f32(b * 0.37).to_f32().to_bits()
                );
            }
        }
    }
}

/// `(keys, queries)` of a tile: `rows` keys of width `d` at `stride`, `nq` queries.
fn tile_data(
    rng: &mut Rng,
    rows: usize,
    d: usize,
    stride: usize,
    nq: usize,
) -> (Vec<u16>, Vec<f32>) {
    let k = halves(
        &(0..rows * stride + d)
            .map(|_| rng.uniform())
            .collect::<Vec<_>>(),
    );
    let q = (0..nq * d).map(|_| rng.uniform()).collect();
    (k, q)
}

#[test]
fn dot_tile_matches_reference_and_is_tile_independent() {
    let mut rng = Rng::new(0xd07);
    for k in attn_tiers() {
        for d in [1usize, 7, 8, 9, 24, 64, 100, 256] {
            for (rows, nq) in [
                (0usize, 3usize),
                (1, 1),
                (5, 3),
                (9, 4),
                (13, 7),
                (4, 9),
                (64, 3),
            ] {
                let stride = 3 * d + 5;
                let (kd, q) = tile_data(&mut rng, rows, d, stride, nq);
                let keys = F16Rows {
                    data: &kd,
                    stride,
                    rows,
                    width: d,
                };
                let os = rows + 2;
                let mut out = vec![f32::NAN; nq * os];
                k.dot_f16_tile(keys, &q, &mut out, os).unwrap();
                for i in 0..nq {
                    for j in 0..rows {
                        let kr = &kd[j * stride..][..d];
                        let qi = &q[i * d..][..d];
                        let want: f64 = kr.iter().zip(qi).map(|(&a, &b)| h(a) * f64::from(b)).sum();
                        let mag: f64 = kr
                            .iter()
                            .zip(qi)
                            .map(|(&a, &b)| (h(a) * f64::from(b)).abs())
                            .sum();
                        let got = out[i * os + j];
                        assert!(
                            (f64::from(got) - want).abs() <= 1e-6 * mag + 1e-30,
                            "{} d {d} rows {rows} nq {nq}: {got} {want}",
                            k.attn_isa()
                        );
                        // Alone: one key, one query.
                        let one = F16Rows {
                            data: kr,
                            stride: d,
                            rows: 1,
                            width: d,
                        };
                        let mut o1 = [0.0f32];
                        k.dot_f16_tile(one, qi, &mut o1, 1).unwrap();
                        assert_eq!(o1[0].to_bits(), got.to_bits(), "{} d {d}", k.attn_isa());
                    }
                    // Untouched padding between output rows.
                    for j in rows..os {
                        assert!(out[i * os + j].is_nan());
                    }
                }
            }
        }
    }
}

#[test]
fn axpy_tile_matches_reference_and_is_tile_independent() {
    let mut rng = Rng::new(0xa4b);
    for k in attn_tiers() {
        for width in [0usize, 3, 8, 16, 24, 40, 64, 100, 256] {
            for (rows, n) in [(0usize, 2usize), (1, 1), (7, 3), (64, 4), (33, 9)] {
                let stride = 2 * width + 3;
                let vd = halves(
                    &(0..rows * stride + width)
                        .map(|_| rng.uniform())
                        .collect::<Vec<_>>(),
                );
                let ws = rows + 1;
                let w: Vec<f32> = (0..n * ws).map(|_| rng.uniform().abs()).collect();
                let os = width + 5;
                let base: Vec<f32> = (0..n * os).map(|_| rng.uniform()).collect();
                let v = F16Rows {
                    data: &vd,
                    stride,
                    rows,
                    width,
                };
                let mut out = base.clone();
                k.axpy_f16_tile(v, &w, ws, &mut out, os, n).unwrap();
                for i in 0..n {
                    for c in 0..os {
                        let at = i * os + c;
                        if c >= width {
                            assert_eq!(out[at], base[at], "padding");
                            continue;
                        }
                        let mut want = f64::from(base[at]);
                        let mut mag = want.abs();
                        for j in 0..rows {
                            let t = f64::from(w[i * ws + j]) * h(vd[j * stride + c]);
                            want += t;
                            mag += t.abs();
                        }
                        assert!(
                            (f64::from(out[at]) - want).abs() <= 2e-6 * mag + 1e-30,
                            "{} width {width} rows {rows} n {n}",
                            k.attn_isa()
                        );
                    }
                }
                // Outputs one at a time, columns cut at multiples of 8, rows in two calls.
                let mut split = base.clone();
                let cut_r = rows / 2;
                for i in 0..n {
                    let mut c0 = 0;
                    while c0 < width {
                        let c1 = (c0 + 8 * (1 + i % 3)).min(width);
                        for (r0, r1) in [(0, cut_r), (cut_r, rows)] {
                            let part = F16Rows {
                                data: &vd[r0 * stride + c0..],
                                stride,
                                rows: r1 - r0,
                                width: c1 - c0,
                            };
                            let wi = &w[i * ws + r0..];
                            k.axpy_f16_tile(part, wi, ws, &mut split[i * os + c0..], os, 1)
                                .unwrap();
                        }
                        c0 = c1;
                    }
                }
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&split), bits(&out), "{} width {width}", k.attn_isa());
            }
        }
    }
}

#[test]
fn tiles_refuse_bad_shapes() {
    let k = Kernels::select(detected());
    let data = vec![0u16; 100];
    let rows = F16Rows {
        data: &data,
        stride: 40,
        rows: 3,
        width: 30,
    };
    let mut out = vec![0.0f32; 64];
    // Row 2 ends at 110 > 100.
    assert!(k.dot_f16_tile(rows, &[0.0; 30], &mut out, 3).is_err());
    let ok = F16Rows { rows: 2, ..rows };
    // 31 values are not a whole number of queries.
    assert!(k.dot_f16_tile(ok, &[0.0; 31], &mut out, 2).is_err());
    // Output stride narrower than the rows.
    assert!(k.dot_f16_tile(ok, &[0.0; 60], &mut out, 1).is_err());
    // Output too short.
    assert!(k.dot_f16_tile(ok, &[0.0; 60], &mut out[..2], 2).is_err());
    assert!(k.dot_f16_tile(ok, &[0.0; 60], &mut out, 2).is_ok());
    // Weights too short, weight stride narrower than the rows, outputs too short.
    assert!(k.axpy_f16_tile(ok, &[0.0; 3], 2, &mut out, 30, 2).is_err());
    assert!(k.axpy_f16_tile(ok, &[0.0; 4], 1, &mut out, 30, 2).is_err());
    assert!(k.axpy_f16_tile(ok, &[0.0; 4], 2, &mut out, 30, 3).is_err());
    assert!(k.axpy_f16_tile(ok, &[0.0; 4], 2, &mut out, 30, 2).is_ok());
    // Zero-width keys: no queries, nothing written.
    let empty = F16Rows { width: 0, ..ok };
    let mut o = [f32::NAN; 4];
    assert!(k.dot_f16_tile(empty, &[], &mut o, 2).is_ok());
    assert!(o.iter().all(|v| v.is_nan()));
}

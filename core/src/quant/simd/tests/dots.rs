//! Dot products: each kernel sums each block's quants exactly in integers, like the scalar
//! one; only the order of the f32 additions differs. The test allows
//! `|simd - scalar| <= 1e-5 · M`, with `M = sum(|w_i · a_i|)` over the dequantized values,
//! where for formats with a min (Q4_1, Q4_K, Q5_K) the scale part and the min part of each
//! weight count separately (they can cancel in `w_i`, not in the kernel). The NEON kernels
//! must match bit for bit.

extern crate std;

use std::vec;
use std::vec::Vec;

use super::super::super::tests::{random_weight_bytes, Rng};
use super::super::super::*;
use super::{deq, quant_act, tiers, DOT_TYPES};

/// The weights with every quant zeroed: the min part of each weight, for formats with one.
fn min_part(ty: GgmlType, w: &[u8], n: usize) -> Option<Vec<f32>> {
    let mut z = w.to_vec();
    match ty {
        GgmlType::Q4_1 => {
            for b in bytemuck::cast_slice_mut::<u8, BlockQ4_1>(&mut z) {
                b.qs = [0; 16];
            }
        }
        GgmlType::Q4_K => {
            for b in bytemuck::cast_slice_mut::<u8, BlockQ4K>(&mut z) {
                b.qs = [0; 128];
            }
        }
        GgmlType::Q5_K => {
            for b in bytemuck::cast_slice_mut::<u8, BlockQ5K>(&mut z) {
                b.qs = [0; 128];
                b.qh = [0; 32];
            }
        }
        _ => return None,
    }
    Some(deq(ty, &z, n))
}

/// `M` of the module docs for one row.
fn magnitude(ty: GgmlType, w: &[u8], act: &[u8], n: usize) -> f64 {
    let wd = deq(ty, w, n);
    let ad = deq(vec_dot_type(ty), act, n);
    let mins = min_part(ty, w, n).unwrap_or_else(|| vec![0.0; n]);
    wd.iter()
        .zip(&mins)
        .zip(&ad)
        .map(|((&w, &m), &a)| {
            let (w, m, a) = (f64::from(w), f64::from(m), f64::from(a));
            ((w - m) * a).abs() + (m * a).abs()
        })
        .sum()
}

/// Runs `dot_rows` of every tier on `rows` weight rows against `act` and checks each result
/// against the scalar `vec_dot`. Returns the worst `err / tol`.
fn check_rows(ty: GgmlType, n: usize, w: &[u8], act: &[u8], tiers: &[Kernels]) -> f64 {
    let rb = ty.row_bytes(n).unwrap();
    let rows = w.len() / rb;
    let want: Vec<f32> = w
        .chunks_exact(rb)
        .map(|r| vec_dot(ty, n, r, act).unwrap())
        .collect();
    let tol: Vec<f64> = w
        .chunks_exact(rb)
        .map(|r| 1e-5 * magnitude(ty, r, act, n) + 1e-30)
        .collect();
    let mut worst = 0.0f64;
    for k in tiers {
        let mut got = vec![f32::NAN; rows];
        k.dot_rows(ty, n, w, act, &mut got).unwrap();
        for (i, ((&g, &s), &t)) in got.iter().zip(&want).zip(&tol).enumerate() {
            let err = (f64::from(g) - f64::from(s)).abs();
            assert!(
                err <= t,
                "{} {}: n {n} row {i}/{rows}: simd {g} scalar {s} err {err} > tol {t}",
                ty.name(),
                k.dot_isa(ty),
            );
            worst = worst.max(err / t);
            if matches!(k.dot_isa(ty), Isa::Neon | Isa::NeonDot) {
                // The NEON kernels reduce each block and scale it as the scalar code does.
                assert_eq!(g.to_bits(), s.to_bits(), "{} {}", ty.name(), k.dot_isa(ty));
            }
        }
    }
    worst
}

/// Activation bytes with random quants in the whole `i8` range (including -128, which the
/// quantizers never write), random scales, and consistent sums (Q8_1 `s`, Q8_K `bsums`).
pub(super) fn random_act(ty: GgmlType, n: usize, rng: &mut Rng) -> Vec<u8> {
    let mut b = rng.bytes(ty.row_bytes(n).unwrap());
    match ty {
        GgmlType::Q8_0 => {
            for x in bytemuck::cast_slice_mut::<u8, BlockQ8_0>(&mut b) {
                x.d = rng.scale(true);
            }
        }
        GgmlType::Q8_1 => {
            for x in bytemuck::cast_slice_mut::<u8, BlockQ8_1>(&mut b) {
                x.d = rng.scale(true);
                let sum: i32 = x.qs.iter().map(|&q| i32::from(q)).sum();
                x.s = F16Le::from_f32(x.d.to_f32() * sum as f32);
            }
        }
        GgmlType::Q8_K => {
            for x in bytemuck::cast_slice_mut::<u8, BlockQ8K>(&mut b) {
                x.d = F32Le::new(rng.uniform());
                for (s, q) in x.bsums.iter_mut().zip(x.qs.chunks_exact(16)) {
                    *s = I16Le::new(q.iter().map(|&q| i16::from(q)).sum());
                }
            }
        }
        _ => unreachable!(),
    }
    b
}

#[test]
fn simd_dots_match_scalar_on_random_blocks() {
    let tiers = tiers();
    let mut rng = Rng::new(0x51d);
    for ty in DOT_TYPES {
        let aty = vec_dot_type(ty);
        let mut worst = 0.0f64;
        let sizes: &[usize] = if ty.block_size() == 32 {
            &[32, 64, 96, 576, 4096]
        } else {
            &[256, 512, 1536, 4096]
        };
        for &n in sizes {
            for rows in [1usize, 2, 3, 4, 5, 7, 8, 9] {
                let w = random_weight_bytes(ty, rows * n / ty.block_size(), &mut rng);
                let act = quant_act(aty, &rng.data(n));
                worst = worst.max(check_rows(ty, n, &w, &act, &tiers));
                let act = random_act(aty, n, &mut rng);
                worst = worst.max(check_rows(ty, n, &w, &act, &tiers));
            }
        }
        std::println!("{}: max err/tol = {worst:.4}", ty.name());
    }
}

#[test]
fn simd_dots_match_scalar_at_the_integer_extremes() {
    // Quants at their largest magnitudes against activations of all +127, all -128 and
    // alternating signs: any saturating i16 step would show here.
    let tiers = tiers();
    let mut rng = Rng::new(7);
    for ty in DOT_TYPES {
        let aty = vec_dot_type(ty);
        let n = 4 * QK_K;
        for fill in [0x00u8, 0xff, 0x80, 0x7f, 0x55] {
            let mut w = random_weight_bytes(ty, 4 * n / ty.block_size(), &mut rng);
            let keep = random_weight_bytes(ty, 4 * n / ty.block_size(), &mut rng);
            // Overwrite everything, then restore the scale fields (and Q6_K scales) from a
            // sane random copy, so only the quants are extreme.
            w.iter_mut().for_each(|b| *b = fill);
            restore_scales(ty, &mut w, &keep);
            let patterns: [fn(usize) -> i8; 3] =
                [|_| 127, |_| -128, |i| if i % 2 == 0 { -128 } else { 127 }];
            for q in patterns {
                let mut act = random_act(aty, n, &mut rng);
                set_act_quants(aty, &mut act, q);
                check_rows(ty, n, &w, &act, &tiers);
            }
        }
    }
}

/// Copies the non-quant fields of each block from `src` into `w`.
fn restore_scales(ty: GgmlType, w: &mut [u8], src: &[u8]) {
    fn each<T: bytemuck::Pod>(w: &mut [u8], src: &[u8], f: impl Fn(&mut T, &T)) {
        let s = bytemuck::cast_slice::<u8, T>(src);
        for (b, s) in bytemuck::cast_slice_mut::<u8, T>(w).iter_mut().zip(s) {
            f(b, s);
        }
    }
    match ty {
        GgmlType::Q4_0 => each(w, src, |b: &mut BlockQ4_0, s| b.d = s.d),
        GgmlType::Q4_1 => each(w, src, |b: &mut BlockQ4_1, s| (b.d, b.m) = (s.d, s.m)),
        GgmlType::Q5_0 => each(w, src, |b: &mut BlockQ5_0, s| b.d = s.d),
        GgmlType::Q8_0 => each(w, src, |b: &mut BlockQ8_0, s| b.d = s.d),
        GgmlType::Q4_K => each(w, src, |b: &mut BlockQ4K, s| (b.d, b.dmin) = (s.d, s.dmin)),
        GgmlType::Q5_K => each(w, src, |b: &mut BlockQ5K, s| (b.d, b.dmin) = (s.d, s.dmin)),
        GgmlType::Q6_K => each(w, src, |b: &mut BlockQ6K, s| b.d = s.d),
        _ => unreachable!(),
    }
}

/// Sets activation quant `i` to `q(i)` and refreshes the block sums.
fn set_act_quants(ty: GgmlType, act: &mut [u8], q: impl Fn(usize) -> i8) {
    match ty {
        GgmlType::Q8_0 => {
            for (j, b) in bytemuck::cast_slice_mut::<u8, BlockQ8_0>(act)
                .iter_mut()
                .enumerate()
            {
                b.qs.iter_mut()
                    .enumerate()
                    .for_each(|(i, v)| *v = q(32 * j + i));
            }
        }
        GgmlType::Q8_1 => {
            for (j, b) in bytemuck::cast_slice_mut::<u8, BlockQ8_1>(act)
                .iter_mut()
                .enumerate()
            {
                b.qs.iter_mut()
                    .enumerate()
                    .for_each(|(i, v)| *v = q(32 * j + i));
                let sum: i32 = b.qs.iter().map(|&v| i32::from(v)).sum();
                b.s = F16Le::from_f32(b.d.to_f32() * sum as f32);
            }
        }
        GgmlType::Q8_K => {
            for (j, b) in bytemuck::cast_slice_mut::<u8, BlockQ8K>(act)
                .iter_mut()
                .enumerate()
            {
                b.qs.iter_mut()
                    .enumerate()
                    .for_each(|(i, v)| *v = q(256 * j + i));
                for (s, c) in b.bsums.iter_mut().zip(b.qs.chunks_exact(16)) {
                    *s = I16Le::new(c.iter().map(|&v| i16::from(v)).sum());
                }
            }
        }
        _ => unreachable!(),
    }
}

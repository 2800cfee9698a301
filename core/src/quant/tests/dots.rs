//! vec_dot against dequantize-then-dot in f64.
//!
//! Every kernel sums each block's quant products exactly in i32, so the only differences from
//! the f64 reference are f32 roundings of scale products and of the running sum: the test
//! allows `1e-5 * sum(|w_i * a_i|)`, where for formats with a min the scale part and the min
//! part of each weight count separately (they can cancel in `w_i`, not in the kernel). Q4_1
//! additionally allows for Q8_1's `s`, which is `d * sum(q)` rounded to f16 from the unrounded
//! `d`, so it differs from the dequantized activations' sum by up to 2^-10 relative.

use std::vec::Vec;

use super::*;

/// The min part (`y` with all quants zero) of each weight, for formats that have one.
fn min_part(ty: GgmlType, w: &[u8], n: usize) -> Option<Vec<f32>> {
    let mut z = w.to_vec();
    match ty {
        GgmlType::Q4_1 => set(&mut z, |b: &mut BlockQ4_1| b.qs = [0; 16]),
        GgmlType::Q4_K => set(&mut z, |b: &mut BlockQ4K| b.qs = [0; 128]),
        GgmlType::Q5_K => set(&mut z, |b: &mut BlockQ5K| {
            b.qs = [0; 128];
            b.qh = [0; 32];
        }),
        _ => return None,
    }
    Some(deq(ty, &z, n))
}

fn check_dot(ty: GgmlType, w: &[u8], x: &[f32]) -> f64 {
    let n = x.len();
    let aty = vec_dot_type(ty);
    let act = quant_a(aty, x);
    let got = vec_dot(ty, n, w, &act).expect("vec_dot");
    let wd = deq(ty, w, n);
    let ad = deq(aty, &act, n);
    let reference: f64 = wd
        .iter()
        .zip(&ad)
        .map(|(&p, &q)| f64::from(p) * f64::from(q))
        .sum();
    let mut mag: f64 = wd
        .iter()
        .zip(&ad)
        .map(|(&p, &q)| f64::from(p * q).abs())
        .sum();
    if let Some(m) = min_part(ty, w, n) {
        mag += m
            .iter()
            .zip(&ad)
            .map(|(&p, &q)| f64::from(p * q).abs() * 2.0)
            .sum::<f64>();
    }
    let mut tol = 1e-5 * mag + 1e-30;
    if ty == GgmlType::Q4_1 {
        let wb: &[BlockQ4_1] = bytemuck::cast_slice(w);
        let ab: &[BlockQ8_1] = bytemuck::cast_slice(&act);
        for (b, a) in wb.iter().zip(ab) {
            let sum: i32 = a.qs.iter().map(|&q| i32::from(q)).sum();
            let s = f64::from(a.d.to_f32()) * f64::from(sum);
            tol += f64::from(b.m.to_f32()).abs() * s.abs() / 512.0;
        }
    }
    let err = (f64::from(got) - reference).abs();
    assert!(
        err <= tol,
        "{}: got {got}, reference {reference}, err {err} > tol {tol}",
        ty.name()
    );
    err / tol
}

#[test]
fn vec_dot_matches_dequantized_dot_on_quantized_weights() {
    let mut rng = Rng::new(11);
    for ty in WEIGHT_TYPES {
        let mut worst = 0.0f64;
        for n in [256usize, 512, 4096] {
            let w = if ty == GgmlType::Q8_K {
                quant_a(ty, &rng.data(n))
            } else {
                quant_w(ty, &rng.data(n))
            };
            worst = worst.max(check_dot(ty, &w, &rng.data(n)));
        }
        std::println!("{}: max err/tol = {worst:.4}", ty.name());
    }
}

#[test]
fn vec_dot_matches_dequantized_dot_on_random_blocks() {
    let mut rng = Rng::new(12);
    for ty in WEIGHT_TYPES {
        let mut worst = 0.0f64;
        for n in [256usize, 1024, 4096] {
            let w = random_weight_bytes(ty, n / ty.block_size(), &mut rng);
            worst = worst.max(check_dot(ty, &w, &rng.data(n)));
        }
        std::println!("{}: max err/tol = {worst:.4}", ty.name());
    }
}

#[test]
fn vec_dot_of_k_quants_uses_the_activation_bsums() {
    // The min term reads Q8_K's bsums, not its quants: corrupt one and the result moves by
    // exactly dmin * d_a * m * delta.
    let mut rng = Rng::new(13);
    let x = rng.data(256);
    let w = quant_w(
        GgmlType::Q4_K,
        &rng.data(256).iter().map(|v| v - 0.5).collect::<Vec<_>>(),
    );
    let mut act = quant_a(GgmlType::Q8_K, &x);
    let before = vec_dot(GgmlType::Q4_K, 256, &w, &act).unwrap();
    let wb: &[BlockQ4K] = bytemuck::cast_slice(&w);
    let (_, m) = unpack_scales_mins(&wb[0].scales);
    let ab: &mut [BlockQ8K] = bytemuck::cast_slice_mut(&mut act);
    ab[0].bsums[0] = I16Le::new(ab[0].bsums[0].get() + 100);
    let d_a = ab[0].d.get();
    let after = vec_dot(GgmlType::Q4_K, 256, &w, &act).unwrap();
    let want = -(wb[0].dmin.to_f32() * d_a * f32::from(m[0]) * 100.0);
    assert!(m[0] > 0, "test needs a non-zero min");
    assert!(((after - before) - want).abs() <= want.abs() * 1e-3 + 1e-6);
}

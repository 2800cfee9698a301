//! Every SIMD kernel the CPU running the tests can execute, against the scalar reference.
//!
//! Dot products: each kernel sums each block's quants exactly in integers, like the scalar
//! one; only the order of the f32 additions differs. The test allows
//! `|simd - scalar| <= 1e-5 · M`, with `M = sum(|w_i · a_i|)` over the dequantized values,
//! where for formats with a min (Q4_1, Q4_K, Q5_K) the scale part and the min part of each
//! weight count separately (they can cancel in `w_i`, not in the kernel).
//!
//! Quantizers: the SIMD bytes must equal the scalar bytes exactly.
//!
//! Every tier is tested on its own: the detected features are cut down to each subset, so a
//! CPU with AVX-512 also runs the AVX2 and AVX-VNNI kernels.
extern crate std;

use std::vec;
use std::vec::Vec;

use super::super::tests::{random_weight_bytes, Rng};
use super::super::*;

/// The features of the CPU running the tests, detected with std.
fn detected() -> CpuFeatures {
    let mut f = CpuFeatures::none();
    #[cfg(target_arch = "x86_64")]
    {
        use std::is_x86_feature_detected as has;
        let found = [
            (Feature::Avx2, has!("avx2") && has!("fma") && has!("f16c")),
            (Feature::AvxVnni, has!("avxvnni")),
            (
                Feature::Avx512,
                has!("avx512f") && has!("avx512bw") && has!("avx512vl"),
            ),
            (Feature::Avx512Vnni, has!("avx512vnni")),
        ];
        for (feat, on) in found {
            if on {
                // SAFETY: std just detected the feature on this CPU.
                f = unsafe { f.assume(feat) };
            }
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        use std::arch::is_aarch64_feature_detected as has;
        for (feat, on) in [
            (Feature::Neon, has!("neon")),
            (Feature::DotProd, has!("dotprod")),
        ] {
            if on {
                // SAFETY: std just detected the feature on this CPU.
                f = unsafe { f.assume(feat) };
            }
        }
    }
    f
}

/// Kernel tables for every subset of the detected features, one per distinct choice.
fn tiers() -> Vec<Kernels> {
    let full = detected();
    let present: Vec<Feature> = Feature::ALL.into_iter().filter(|&x| full.has(x)).collect();
    let mut out: Vec<Kernels> = Vec::new();
    let mut seen: Vec<Vec<Isa>> = Vec::new();
    for mask in 0u32..(1 << present.len()) {
        let mut f = full;
        for (i, &feat) in present.iter().enumerate() {
            if mask & (1 << i) != 0 {
                f = f.without(feat);
            }
        }
        let k = Kernels::select(f);
        let sig: Vec<Isa> = DOT_TYPES
            .iter()
            .map(|&t| k.dot_isa(t))
            .chain(ACT_TYPES.iter().map(|&t| k.quantize_isa(t)))
            .collect();
        if !seen.contains(&sig) {
            seen.push(sig);
            out.push(k);
        }
    }
    std::println!("detected {full}; testing {} kernel tables", out.len());
    out
}

const DOT_TYPES: [GgmlType; 7] = [
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q8_0,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
];

const ACT_TYPES: [GgmlType; 3] = [GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K];

fn deq(ty: GgmlType, b: &[u8], n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    dequantize_row(ty, b, &mut out).unwrap();
    out
}

fn quant_act(ty: GgmlType, x: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; ty.row_bytes(x.len()).unwrap()];
    quantize_row(ty, x, &mut out).unwrap();
    out
}

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
fn random_act(ty: GgmlType, n: usize, rng: &mut Rng) -> Vec<u8> {
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

/// Rows of values that stress the quantizers: NaN, infinities, huge and tiny magnitudes
/// (where `127 / amax` overflows and the scales round to f16 subnormals or infinity),
/// exact rounding ties, sign ties of the largest magnitude, and zero blocks.
fn nasty_rows(rng: &mut Rng) -> Vec<Vec<f32>> {
    let n = 4 * QK_K;
    let mut rows = Vec::new();
    rows.push(rng.data(n));
    rows.push(vec![0.0; n]);
    rows.push(
        (0..n)
            .map(|i| if i % 3 == 0 { -0.0 } else { 0.0 })
            .collect(),
    );
    for mag in [1e-38f32, 3e-37, 1e-30, 1e-6, 1.0, 6e4, 7e4, 1e30, 3.4e38] {
        rows.push(rng.data(n).iter().map(|v| v * mag).collect());
    }
    // Ties: with amax = 127 the quants are x itself; halves round to even.
    rows.push(
        (0..n)
            .map(|i| {
                if i % 32 == 0 {
                    127.0
                } else {
                    (i % 64) as f32 - 31.5
                }
            })
            .collect(),
    );
    rows.push(
        (0..n)
            .map(|i| {
                if i % 256 == 5 {
                    -127.0
                } else {
                    (i % 40) as f32 * 0.5 - 9.5
                }
            })
            .collect(),
    );
    // Equal magnitudes of both signs: the first one fixes Q8_K's sign.
    rows.push(
        (0..n)
            .map(|i| {
                if i % 7 == 0 {
                    -2.0
                } else if i % 5 == 0 {
                    2.0
                } else {
                    0.1
                }
            })
            .collect(),
    );
    rows.push(
        (0..n)
            .map(|i| {
                if i % 7 == 3 {
                    2.0
                } else if i % 5 == 0 {
                    -2.0
                } else {
                    -0.1
                }
            })
            .collect(),
    );
    let mut special = rng.data(n);
    for (i, v) in special.iter_mut().enumerate() {
        match i % 97 {
            0 => *v = f32::NAN,
            1 if i % 3 == 0 => *v = f32::INFINITY,
            2 if i % 5 == 0 => *v = f32::NEG_INFINITY,
            3 => *v = f32::from_bits(1),
            _ => {}
        }
    }
    rows.push(special);
    let mut nan_block = rng.data(n);
    nan_block[..QK_K].iter_mut().for_each(|v| *v = f32::NAN);
    nan_block[QK_K + 7] = f32::NAN;
    rows.push(nan_block);
    // Random bit patterns: every kind of float at once.
    rows.push(
        (0..n)
            .map(|_| f32::from_bits(rng.next_u64() as u32))
            .collect(),
    );
    rows
}

#[test]
fn simd_quantizers_write_the_scalar_bytes() {
    let tiers = tiers();
    let mut rng = Rng::new(99);
    let mut rows = nasty_rows(&mut rng);
    for _ in 0..20 {
        rows.push(rng.data(4096));
    }
    for ty in ACT_TYPES {
        for (r, x) in rows.iter().enumerate() {
            let want = quant_act(ty, x);
            for k in &tiers {
                let mut got = vec![0xa5u8; want.len()];
                k.quantize_row(ty, x, &mut got).unwrap();
                if let Some(at) = got.iter().zip(&want).position(|(g, w)| g != w) {
                    panic!(
                        "{} ({}): row {r}: first differing byte {at} of {}: simd {:#04x} scalar {:#04x}",
                        ty.name(),
                        k.quantize_isa(ty),
                        want.len(),
                        got[at],
                        want[at]
                    );
                }
            }
        }
    }
}

#[test]
fn scalar_kernels_are_the_free_functions() {
    let k = Kernels::scalar();
    let mut rng = Rng::new(3);
    for ty in [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::BF16,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q8_0,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::Q8_K,
    ] {
        let n = 512;
        let aty = vec_dot_type(ty);
        let w = random_weight_bytes(ty, 3 * n / ty.block_size(), &mut rng);
        let x = rng.data(n);
        let act = quant_act(aty, &x);
        let mut kact = vec![0u8; act.len()];
        k.quantize_row(aty, &x, &mut kact).unwrap();
        assert_eq!(act, kact, "{}", aty.name());
        let mut got = [0.0f32; 3];
        k.dot_rows(ty, n, &w, &act, &mut got).unwrap();
        for (row, g) in w.chunks_exact(ty.row_bytes(n).unwrap()).zip(got) {
            let want = vec_dot(ty, n, row, &act).unwrap();
            assert_eq!(g.to_bits(), want.to_bits(), "{}", ty.name());
        }
        // Every table agrees on the types without SIMD kernels too.
        for t in tiers() {
            let mut g2 = [0.0f32; 3];
            t.dot_rows(ty, n, &w, &act, &mut g2).unwrap();
            if !DOT_TYPES.contains(&ty) {
                assert_eq!(got.map(f32::to_bits), g2.map(f32::to_bits), "{}", ty.name());
            }
        }
    }
}

#[test]
fn dot_rows_checks_its_arguments() {
    let k = Kernels::select(detected());
    let ty = GgmlType::Q4_0;
    let w = vec![0u8; 3 * 18];
    let act = vec![0u8; 34];
    let mut out = [1.0f32; 3];
    k.dot_rows(ty, 32, &w, &act, &mut out).unwrap();
    assert_eq!(out, [0.0; 3]);
    let bad = |r: Result<(), QuantError>| r.unwrap_err().kind();
    assert_eq!(
        bad(k.dot_rows(ty, 32, &w, &act, &mut out[..2])),
        "bad_length"
    );
    assert_eq!(
        bad(k.dot_rows(ty, 32, &w[1..], &act, &mut out)),
        "bad_length"
    );
    assert_eq!(
        bad(k.dot_rows(ty, 32, &w, &act[1..], &mut out)),
        "bad_length"
    );
    assert_eq!(
        bad(k.dot_rows(ty, 31, &w, &act, &mut out)),
        "not_block_multiple"
    );
    assert_eq!(
        bad(k.dot_rows(GgmlType::Q2_K, 256, &w, &act, &mut out)),
        "unsupported_type"
    );
    assert_eq!(k.vec_dot(ty, 0, &[], &[]), Ok(0.0));
    let mut none: [f32; 0] = [];
    k.dot_rows(ty, 32, &[], &act, &mut none).unwrap();
    let mut q = vec![0u8; 33];
    assert_eq!(
        k.quantize_row(GgmlType::Q8_0, &[0.0; 32], &mut q)
            .unwrap_err()
            .kind(),
        "bad_length"
    );
    assert_eq!(
        k.quantize_row(GgmlType::Q4_0, &[0.0; 32], &mut q[..18])
            .unwrap_err()
            .kind(),
        "unsupported_type"
    );
}

#[test]
fn select_uses_no_feature_it_was_not_given() {
    let k = Kernels::select(CpuFeatures::none());
    for ty in DOT_TYPES {
        assert_eq!(k.dot_isa(ty), Isa::Scalar, "{}", ty.name());
    }
    for ty in ACT_TYPES {
        assert_eq!(k.quantize_isa(ty), Isa::Scalar, "{}", ty.name());
    }
    let full = detected();
    let k = Kernels::select(full);
    assert_eq!(k.features(), full);
    std::println!("{k:?}");
}

#[test]
fn scales_mins_k4_matches_unpack() {
    let mut rng = Rng::new(5);
    for _ in 0..1000 {
        let b: [u8; 12] = core::array::from_fn(|_| rng.next_u64() as u8);
        let (sc, m) = unpack_scales_mins(&b);
        let (s2, m2) = super::scales_mins_k4(&b);
        assert_eq!(u64::from_le_bytes(sc), s2);
        assert_eq!(u64::from_le_bytes(m), m2);
    }
}

#[test]
fn compiled_features_are_detected_ones() {
    let c = CpuFeatures::compiled();
    let d = detected();
    for f in Feature::ALL {
        assert!(
            !c.has(f) || d.has(f),
            "{} compiled in but not detected",
            f.name()
        );
    }
}

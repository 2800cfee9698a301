//! The `Kernels` API: argument checks, the scalar table, selection, helpers.

extern crate std;

use std::vec;

use super::super::super::tests::{random_weight_bytes, Rng};
use super::super::super::*;
use super::{detected, quant_act, tiers, ACT_TYPES, DOT_TYPES};

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
        let (s2, m2) = super::super::scales_mins_k4(&b);
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

//! The matrix-matrix path (`Kernels::dot_tile`) against the scalar reference on random data,
//! with the tolerance of `dots.rs`, and bit for bit against the same tier's `dot_rows`.

extern crate std;

use std::vec;
use std::vec::Vec;

use super::super::super::tests::{random_weight_bytes, Rng};
use super::super::super::*;
use super::dots::random_act;
use super::{quant_act, tiers, DOT_TYPES};

/// Weight rows × activation rows: across several tiles with ragged ends, and counts that are
/// not multiples of any register block (x86: 2 × 8, 2 × 4, 1 × 8; NEON: 2 × 4).
const SHAPES: [(usize, usize); 10] = [
    (1, 1),
    (1, 2),
    (5, 3),
    (16, 1),
    (2, 4),
    (8, 8),
    (37, 6),
    (Kernels::TILE_ROWS + 3, 4),
    (3, 9),
    (2 * Kernels::TILE_ROWS + 7, 13),
];

#[test]
fn dot_tile_matches_scalar_and_dot_rows() {
    let tiers = tiers();
    let mut rng = Rng::new(0x711e);
    for ty in DOT_TYPES {
        let aty = vec_dot_type(ty);
        let n = if ty.block_size() == 32 { 96 } else { 512 };
        let rb = ty.row_bytes(n).unwrap();
        let ab = aty.row_bytes(n).unwrap();
        for (m, k) in SHAPES {
            let w = random_weight_bytes(ty, m * n / ty.block_size(), &mut rng);
            let acts: Vec<u8> = (0..k).flat_map(|_| quant_act(aty, &rng.data(n))).collect();
            for kern in &tiers {
                let mut got = vec![f32::NAN; m * k];
                kern.dot_tile(ty, n, &w, &acts, &mut got).unwrap();
                for (r, act) in acts.chunks_exact(ab).enumerate() {
                    let mut rows = vec![f32::NAN; m];
                    kern.dot_rows(ty, n, &w, act, &mut rows).unwrap();
                    for (i, wr) in w.chunks_exact(rb).enumerate() {
                        let g = got[r * m + i];
                        assert_eq!(
                            g.to_bits(),
                            rows[i].to_bits(),
                            "{} {}",
                            ty.name(),
                            kern.dot_isa(ty)
                        );
                        let s = vec_dot(ty, n, wr, act).unwrap();
                        let mag: f32 = {
                            let mut wd = vec![0.0f32; n];
                            let mut ad = vec![0.0f32; n];
                            dequantize_row(ty, wr, &mut wd).unwrap();
                            dequantize_row(aty, act, &mut ad).unwrap();
                            wd.iter().zip(&ad).map(|(a, b)| (a * b).abs()).sum()
                        };
                        // Formats with a min can cancel inside `w`; allow for it as dots.rs
                        // does with a looser bound on the plain magnitude.
                        let tol = 1e-4 * mag + 1e-4 * s.abs() + 1e-6;
                        assert!(
                            (g - s).abs() <= tol,
                            "{} {}: m {m} k {k} row {i} act {r}: tile {g} scalar {s}",
                            ty.name(),
                            kern.dot_isa(ty)
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn dot_tile_is_bit_identical_to_dot_rows_on_any_bytes() {
    // Activation quants over the whole i8 range (with -128, which no quantizer writes),
    // several lengths, every shape: each output must equal `dot_rows` bit for bit.
    let tiers = tiers();
    let mut rng = Rng::new(0xb17);
    for ty in DOT_TYPES {
        let aty = vec_dot_type(ty);
        let lens: &[usize] = if ty.block_size() == 32 {
            &[32, 640, 1024]
        } else {
            &[256, 768, 2048]
        };
        for &n in lens {
            let rb = ty.row_bytes(n).unwrap();
            let ab = aty.row_bytes(n).unwrap();
            for (m, k) in SHAPES {
                let w = random_weight_bytes(ty, m * n / ty.block_size(), &mut rng);
                let acts: Vec<u8> = (0..k).flat_map(|_| random_act(aty, n, &mut rng)).collect();
                for kern in &tiers {
                    let mut got = vec![f32::NAN; m * k];
                    kern.dot_tile(ty, n, &w, &acts, &mut got).unwrap();
                    for (r, act) in acts.chunks_exact(ab).enumerate() {
                        let mut rows = vec![f32::NAN; m];
                        kern.dot_rows(ty, n, &w, act, &mut rows).unwrap();
                        for (i, &want) in rows.iter().enumerate() {
                            assert_eq!(
                                got[r * m + i].to_bits(),
                                want.to_bits(),
                                "{} {}: n {n} m {m} k {k} row {i} act {r}",
                                ty.name(),
                                kern.dot_isa(ty)
                            );
                        }
                    }
                    assert_eq!(w.len(), m * rb);
                }
            }
        }
    }
}

#[test]
fn dot_tile_checks_its_arguments() {
    let k = Kernels::scalar();
    let ty = GgmlType::Q4_0;
    let w = vec![0u8; 3 * 18];
    let acts = vec![0u8; 2 * 34];
    let mut out = [1.0f32; 6];
    k.dot_tile(ty, 32, &w, &acts, &mut out).unwrap();
    assert_eq!(out, [0.0; 6]);
    assert!(k.dot_tile(ty, 32, &w, &acts, &mut out[..5]).is_err());
    assert!(k.dot_tile(ty, 32, &w[..50], &acts, &mut out).is_err());
    assert!(k.dot_tile(ty, 32, &w, &acts[..60], &mut out).is_err());
    assert!(k.dot_tile(ty, 48, &w, &acts, &mut out).is_err());
    assert!(k.dot_tile(GgmlType::Q8_1, 32, &[], &[], &mut []).is_err());
}

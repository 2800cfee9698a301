//! The matrix-matrix path (`Kernels::dot_tile`) against the scalar reference on random data,
//! with the tolerance of `dots.rs`, and bit for bit against the same tier's `dot_rows`.

extern crate std;

use std::vec;
use std::vec::Vec;

use super::super::super::tests::{random_weight_bytes, Rng};
use super::super::super::*;
use super::{quant_act, tiers, DOT_TYPES};

#[test]
fn dot_tile_matches_scalar_and_dot_rows() {
    let tiers = tiers();
    let mut rng = Rng::new(0x711e);
    for ty in DOT_TYPES {
        let aty = vec_dot_type(ty);
        let n = if ty.block_size() == 32 { 96 } else { 512 };
        let rb = ty.row_bytes(n).unwrap();
        let ab = aty.row_bytes(n).unwrap();
        // Weight rows across several tiles with a ragged end; 1 to 6 activation rows.
        for (m, k) in [
            (1usize, 2usize),
            (5, 3),
            (16, 1),
            (37, 6),
            (Kernels::TILE_ROWS + 3, 4),
        ] {
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

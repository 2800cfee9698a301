//! The f16 vector kernels (attention's `q·k` and value sums) against the scalar ones.

extern crate std;

use std::vec::Vec;

use super::super::super::tests::Rng;
use super::super::*;
use super::tiers;

fn halves(x: &[f32]) -> Vec<u16> {
    x.iter()
        .map(|&v| half::f16::from_f32(v).to_bits())
        .collect()
}

#[test]
fn f16_kernels_match_scalar() {
    let scalar = Kernels::scalar();
    let mut rng = Rng::new(0xf16);
    for n in [0usize, 1, 7, 8, 9, 16, 24, 64, 100, 256] {
        let k = halves(&rng.data(n));
        let q = rng.data(n);
        let v = halves(&rng.data(n));
        let base = rng.data(n);
        let mag: f32 = k
            .iter()
            .zip(&q)
            .map(|(&a, &b)| (half::f16::from_bits(a).to_f32() * b).abs())
            .sum();
        let want = scalar.dot_f16(&k, &q);
        let mut want_out = base.clone();
        scalar.axpy_f16(&mut want_out, 0.37, &v);
        for t in tiers() {
            let got = t.dot_f16(&k, &q);
            assert!(
                (got - want).abs() <= 1e-5 * mag + 1e-6,
                "{} n {n}: {got} {want}",
                t.f16_isa()
            );
            let mut out = base.clone();
            t.axpy_f16(&mut out, 0.37, &v);
            for (a, b) in out.iter().zip(&want_out) {
                // One rounding apart at most (fused multiply-add against mul + add).
                assert!(
                    (a - b).abs() <= 1e-6 * (1.0 + b.abs()),
                    "{} n {n}: {a} {b}",
                    t.f16_isa()
                );
            }
        }
    }
}

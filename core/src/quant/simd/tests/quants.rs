//! Quantizers: the SIMD bytes must equal the scalar bytes exactly, on ordinary rows and on
//! every awkward float.

extern crate std;

use std::vec;
use std::vec::Vec;

use super::super::super::tests::Rng;
use super::super::super::*;
use super::{quant_act, tiers, ACT_TYPES};

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

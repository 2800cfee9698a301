//! Unit tests for the quant module: helpers shared by the test files.
extern crate std;

use std::vec;
use std::vec::Vec;

use super::*;

mod dots;
mod edges;
mod roundtrip;

/// SplitMix64: a tiny deterministic generator for test data.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub(super) fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    /// Values shaped like weights or activations: a per-32 magnitude that varies over four
    /// decades, an occasional outlier, exact zeros, and one-signed runs.
    pub(super) fn data(&mut self, n: usize) -> Vec<f32> {
        let mut out = Vec::with_capacity(n);
        let mut scale = 1.0f32;
        let mut shift = 0.0f32;
        for i in 0..n {
            if i % 32 == 0 {
                scale = [1e-3, 0.02, 0.3, 1.0, 7.5][(self.next_u64() % 5) as usize];
                shift = if self.next_u64().is_multiple_of(4) {
                    scale * self.uniform()
                } else {
                    0.0
                };
            }
            let r = self.next_u64() % 64;
            let v = match r {
                0 => 0.0,
                1 => 8.0 * scale * self.uniform(),
                _ => scale * (self.uniform() + self.uniform()) * 0.5 + shift,
            };
            out.push(v);
        }
        out
    }

    pub(super) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }

    /// A finite f16 scale of magnitude about 1e-3..1 with random sign when `signed`.
    pub(super) fn scale(&mut self, signed: bool) -> F16Le {
        let mag = 1e-3 + (self.uniform() + 1.0) * 0.5;
        let neg = signed && self.next_u64().is_multiple_of(2);
        F16Le::from_f32(if neg { -mag } else { mag })
    }
}

/// Random bytes for `nblocks` blocks of weight type `ty`, with every scale field replaced by
/// a sane finite f16 (random bytes there would give NaN / infinity).
pub(super) fn random_weight_bytes(ty: GgmlType, nblocks: usize, rng: &mut Rng) -> Vec<u8> {
    let mut b = rng.bytes(nblocks * ty.type_size());
    match ty {
        GgmlType::F16 => {
            for v in bytemuck::cast_slice_mut::<u8, F16Le>(&mut b) {
                *v = F16Le::from_f32(4.0 * rng.uniform());
            }
        }
        GgmlType::BF16 => {
            for v in bytemuck::cast_slice_mut::<u8, Bf16Le>(&mut b) {
                *v = Bf16Le::from_f32(4.0 * rng.uniform());
            }
        }
        GgmlType::F32 => {
            for v in bytemuck::cast_slice_mut::<u8, F32Le>(&mut b) {
                *v = F32Le::new(4.0 * rng.uniform());
            }
        }
        GgmlType::Q4_0 => set(&mut b, |x: &mut BlockQ4_0| x.d = rng.scale(true)),
        GgmlType::Q4_1 => set(&mut b, |x: &mut BlockQ4_1| {
            x.d = rng.scale(false);
            x.m = rng.scale(true);
        }),
        GgmlType::Q5_0 => set(&mut b, |x: &mut BlockQ5_0| x.d = rng.scale(true)),
        GgmlType::Q8_0 => set(&mut b, |x: &mut BlockQ8_0| x.d = rng.scale(true)),
        GgmlType::Q4_K => set(&mut b, |x: &mut BlockQ4K| {
            x.d = rng.scale(false);
            x.dmin = rng.scale(false);
        }),
        GgmlType::Q5_K => set(&mut b, |x: &mut BlockQ5K| {
            x.d = rng.scale(false);
            x.dmin = rng.scale(false);
        }),
        GgmlType::Q6_K => set(&mut b, |x: &mut BlockQ6K| x.d = rng.scale(true)),
        GgmlType::Q8_K => set(&mut b, |x: &mut BlockQ8K| {
            x.d = F32Le::new(rng.uniform());
            for (s, qs) in x.bsums.iter_mut().zip(x.qs.chunks_exact(16)) {
                *s = I16Le::new(qs.iter().map(|&q| i16::from(q)).sum());
            }
        }),
        _ => {}
    }
    b
}

fn set<T: bytemuck::Pod>(b: &mut [u8], mut f: impl FnMut(&mut T)) {
    bytemuck::cast_slice_mut::<u8, T>(b)
        .iter_mut()
        .for_each(&mut f);
}

/// `dequantize_row` into a fresh vector.
pub(super) fn deq(ty: GgmlType, bytes: &[u8], n: usize) -> Vec<f32> {
    let mut out = vec![f32::NAN; n];
    dequantize_row(ty, bytes, &mut out).expect("dequantize");
    out
}

/// `quantize_weights` into a fresh vector.
pub(super) fn quant_w(ty: GgmlType, x: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; ty.row_bytes(x.len()).unwrap()];
    quantize_weights(ty, x, &mut out).expect("quantize_weights");
    out
}

/// `quantize_row` into a fresh vector.
pub(super) fn quant_a(ty: GgmlType, x: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; ty.row_bytes(x.len()).unwrap()];
    quantize_row(ty, x, &mut out).expect("quantize_row");
    out
}

/// The weight types with a dot-product kernel.
pub(super) const WEIGHT_TYPES: [GgmlType; 11] = [
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
];

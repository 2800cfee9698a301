//! Attention of one query row over the f16 KV cache.

use half::f16;

use crate::exec::AttnParams;
use crate::quant::Kernels;

use super::ops::softmax;

/// One layer's cache as attention reads it: `cap` slots of keys and values (f16 bits);
/// position `t` is in slot `t % cap`.
#[derive(Clone, Copy)]
pub struct LayerKv<'a> {
    /// Keys, `(cap, k_dim)`.
    pub keys: &'a [u16],
    /// Values, `(cap, v_dim)`.
    pub values: &'a [u16],
    /// Slots.
    pub cap: usize,
}

/// Attention for one token at `pos`, query heads `heads` only: `q` is the whole row
/// `(n_head, head_dim)`, `out` is `(heads.len(), head_dim_v)`.
/// `kv` is a ring for sliding layers, linear storage when `cap` exceeds every position.
///
/// Mirrors llama.cpp's non-flash CPU path: Q is rounded to f16 before `q·k`, and the softmax
/// weights are rounded to f16 before they weight the values.
#[allow(clippy::too_many_arguments)]
pub fn attend_row(
    p: &AttnParams,
    q: &[f32],
    pos: u32,
    heads: core::ops::Range<usize>,
    kv: LayerKv<'_>,
    scores: &mut [f32],
    out: &mut [f32],
    kern: &Kernels,
) {
    let n_kv = pos as usize + 1;
    let first = match p.window {
        Some(w) => (pos as usize + 1).saturating_sub(w as usize),
        None => 0,
    };
    let group = p.n_head / p.n_head_kv;
    let k_dim = p.n_head_kv * p.head_dim;
    let v_dim = p.n_head_kv * p.head_dim_v;
    let scores = &mut scores[..n_kv - first];
    for h in heads.clone() {
        let kvh = h / group;
        let qh = &q[h * p.head_dim..(h + 1) * p.head_dim];
        let mut q16 = [0f32; 512];
        let q16 = &mut q16[..p.head_dim];
        for (d, &s) in q16.iter_mut().zip(qh) {
            *d = f16::from_f32(s).to_f32();
        }
        for (j, s) in scores.iter_mut().enumerate() {
            let t = (first + j) % kv.cap;
            let kr = &kv.keys[t * k_dim + kvh * p.head_dim..t * k_dim + (kvh + 1) * p.head_dim];
            *s = kern.dot_f16(kr, q16) * p.scale;
        }
        softmax(scores);
        let oh = &mut out[(h - heads.start) * p.head_dim_v..(h - heads.start + 1) * p.head_dim_v];
        oh.fill(0.0);
        for (j, &w) in scores.iter().enumerate() {
            let w16 = f16::from_f32(w).to_f32();
            if w16 == 0.0 {
                continue;
            }
            let t = (first + j) % kv.cap;
            let vr =
                &kv.values[t * v_dim + kvh * p.head_dim_v..t * v_dim + (kvh + 1) * p.head_dim_v];
            kern.axpy_f16(oh, w16, vr);
        }
    }
}

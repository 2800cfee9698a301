//! Attention of one query row over one layer of the paged KV cache.

use half::f16;

use crate::exec::AttnParams;
use crate::kv::LayerView;
use crate::plan::KvType;
use crate::quant::{GgmlType, Kernels};

use super::ops::softmax;
use super::CpuError;

/// `u16` units of one Q8_0 block (an f16 scale and 32 `i8`).
const Q8_UNITS: usize = 17;

/// Bytes of the widest Q8_0-quantized query head (512 values).
const Q8_HEAD_BYTES: usize = 512 / 32 * 34;

/// How a layer's rows are stored and which kernels read them.
#[derive(Clone, Copy)]
pub struct KvRead<'a> {
    /// The layer.
    pub view: LayerView<'a>,
    /// Storage type.
    pub ty: KvType,
    /// Dot-product kernels (Q8_0 keys).
    pub kernels: &'a Kernels,
}

/// Attention for one token at `pos`, query heads `heads` only: `q` is the whole row
/// `(n_head, head_dim)`, `out` is `(heads.len(), head_dim_v)`.
///
/// With f16 storage this mirrors llama.cpp's non-flash CPU path: Q is rounded to f16 before
/// `q·k`, and the softmax weights are rounded to f16 before they weight the values. With Q8_0
/// storage Q is quantized to Q8_0 per head and `q·k` is an integer block dot product (as
/// llama.cpp does for a Q8_0 cache); values are dequantized and accumulated in f32.
pub fn attend_row(
    p: &AttnParams,
    q: &[f32],
    pos: u32,
    heads: core::ops::Range<usize>,
    kv: KvRead<'_>,
    scores: &mut [f32],
    out: &mut [f32],
) -> Result<(), CpuError> {
    let first = match p.window {
        Some(w) => (pos as usize + 1).saturating_sub(w as usize),
        None => 0,
    };
    let n = pos as usize + 1 - first;
    let group = p.n_head / p.n_head_kv;
    let scores = scores.get_mut(..n).ok_or(CpuError::KvRange)?;
    for h in heads.clone() {
        let kvh = h / group;
        let qh = &q[h * p.head_dim..(h + 1) * p.head_dim];
        match kv.ty {
            KvType::F16 => scores_f16(p, qh, kvh, first, &kv, scores)?,
            KvType::Q8_0 => scores_q8(p, qh, kvh, first, &kv, scores)?,
        }
        softmax(scores);
        let hi = h - heads.start;
        let oh = out
            .get_mut(hi * p.head_dim_v..(hi + 1) * p.head_dim_v)
            .ok_or(CpuError::BadRegion)?;
        oh.fill(0.0);
        for (j, &w) in scores.iter().enumerate() {
            let w = match kv.ty {
                KvType::F16 => f16::from_f32(w).to_f32(),
                KvType::Q8_0 => w,
            };
            if w == 0.0 {
                continue;
            }
            let vr = kv.view.value(first + j).ok_or(CpuError::KvRange)?;
            match kv.ty {
                KvType::F16 => {
                    let vh = &vr[kvh * p.head_dim_v..(kvh + 1) * p.head_dim_v];
                    kv.kernels.axpy_f16(oh, w, vh);
                }
                KvType::Q8_0 => {
                    let per = p.head_dim_v / 32 * Q8_UNITS;
                    let vh = &vr[kvh * per..(kvh + 1) * per];
                    for (ob, blk) in oh.chunks_exact_mut(32).zip(vh.chunks_exact(Q8_UNITS)) {
                        let d = w * f16::from_bits(blk[0]).to_f32();
                        let qs: &[u8] = bytemuck::cast_slice(&blk[1..]);
                        for (o, &b) in ob.iter_mut().zip(qs) {
                            *o += d * f32::from(b as i8);
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// `scores[j] = scale · q·k(first + j)` over f16 keys, with Q rounded to f16.
fn scores_f16(
    p: &AttnParams,
    qh: &[f32],
    kvh: usize,
    first: usize,
    kv: &KvRead<'_>,
    scores: &mut [f32],
) -> Result<(), CpuError> {
    let mut q16 = [0f32; 512];
    let q16 = &mut q16[..p.head_dim];
    for (d, &s) in q16.iter_mut().zip(qh) {
        *d = f16::from_f32(s).to_f32();
    }
    for (j, s) in scores.iter_mut().enumerate() {
        let kr = kv.view.key(first + j).ok_or(CpuError::KvRange)?;
        let kh = &kr[kvh * p.head_dim..(kvh + 1) * p.head_dim];
        *s = kv.kernels.dot_f16(kh, q16) * p.scale;
    }
    Ok(())
}

/// `scores[j] = scale · q·k(first + j)` over Q8_0 keys, with Q quantized to Q8_0.
fn scores_q8(
    p: &AttnParams,
    qh: &[f32],
    kvh: usize,
    first: usize,
    kv: &KvRead<'_>,
    scores: &mut [f32],
) -> Result<(), CpuError> {
    let qb = p.head_dim / 32 * 34;
    let mut q8 = [0u8; Q8_HEAD_BYTES];
    let q8 = &mut q8[..qb];
    kv.kernels.quantize_row(GgmlType::Q8_0, qh, q8)?;
    let per = p.head_dim / 32 * Q8_UNITS;
    for (j, s) in scores.iter_mut().enumerate() {
        let kr = kv.view.key(first + j).ok_or(CpuError::KvRange)?;
        let kh: &[u8] = bytemuck::cast_slice(&kr[kvh * per..(kvh + 1) * per]);
        *s = kv.kernels.vec_dot(GgmlType::Q8_0, p.head_dim, kh, q8)? * p.scale;
    }
    Ok(())
}

//! [`Layout`]: where each activation of one forward chunk lives in the arena.

use crate::model::ModelSpec;

use super::Buf;

/// Most tokens one forward call may process.
pub const MAX_CHUNK: usize = 1024;

/// Runtime limits a layout is computed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most tokens per forward call (prefill chunk), at most [`MAX_CHUNK`].
    pub chunk: usize,
    /// Most rows of logits one call returns (1 for plain decoding; up to `chunk`).
    pub logit_rows: usize,
    /// Context length (KV positions per layer).
    pub ctx: usize,
    /// Worker threads that may each need private scratch.
    pub threads: usize,
}

/// The activation regions of one chunk, packed into one `f32` arena.
///
/// Shapes are per chunk of `chunk` rows:
/// ```text
/// x      (chunk, n_embd)              residual stream
/// xn     (chunk, n_embd)              normed input of a sub-block
/// q      (chunk, n_head,    head_dim)
/// k      (chunk, n_head_kv, head_dim)
/// v      (chunk, n_head_kv, head_dim_v)
/// att    (chunk, n_head,    head_dim_v) attention output
/// proj   (chunk, n_embd)              output of attn_output / ffn_down
/// gate   (chunk, n_ff)
/// up     (chunk, n_ff)
/// scores (threads, ctx)               softmax row per worker
/// logits (logit_rows, n_vocab)
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The limits this layout was computed for.
    pub limits: Limits,
    /// Residual stream.
    pub x: Buf,
    /// Normed sub-block input.
    pub xn: Buf,
    /// Queries.
    pub q: Buf,
    /// Keys of the chunk.
    pub k: Buf,
    /// Values of the chunk.
    pub v: Buf,
    /// Attention output.
    pub att: Buf,
    /// Projection output.
    pub proj: Buf,
    /// FFN gate.
    pub gate: Buf,
    /// FFN up.
    pub up: Buf,
    /// Attention score rows, one per worker.
    pub scores: Buf,
    /// Logits.
    pub logits: Buf,
    /// Total `f32` elements of the arena.
    pub arena_len: usize,
    /// Bytes of scratch for activations quantized to a weight's dot-product format.
    pub quant_scratch_bytes: usize,
}

/// Why a layout could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutError {
    /// A limit is zero or `chunk` exceeds [`MAX_CHUNK`] or `logit_rows` exceeds `chunk`.
    BadLimits,
    /// The sizes overflow `usize`.
    Overflow,
}

struct Packer {
    next: usize,
    overflow: bool,
}

impl Packer {
    fn take(&mut self, rows: usize, width: usize) -> Buf {
        let len = rows.checked_mul(width);
        // Keep every region 16-element (64-byte) aligned for SIMD.
        let off = self.next.checked_add(15).map(|v| v & !15);
        match (len, off) {
            (Some(len), Some(off)) => match off.checked_add(len) {
                Some(end) => {
                    self.next = end;
                    Buf { off, len }
                }
                None => {
                    self.overflow = true;
                    Buf { off: 0, len: 0 }
                }
            },
            _ => {
                self.overflow = true;
                Buf { off: 0, len: 0 }
            }
        }
    }
}

impl Layout {
    /// Packs the regions for `spec` under `limits`.
    pub fn new(spec: &ModelSpec, limits: Limits) -> Result<Self, LayoutError> {
        let Limits {
            chunk,
            logit_rows,
            ctx,
            threads,
        } = limits;
        if chunk == 0
            || chunk > MAX_CHUNK
            || logit_rows == 0
            || logit_rows > chunk
            || ctx == 0
            || threads == 0
        {
            return Err(LayoutError::BadLimits);
        }
        let s = spec;
        let mut p = Packer {
            next: 0,
            overflow: false,
        };
        let x = p.take(chunk, s.n_embd);
        let xn = p.take(chunk, s.n_embd);
        let q = p.take(chunk, s.q_dim());
        let k = p.take(chunk, s.k_dim());
        let v = p.take(chunk, s.v_dim());
        let att = p.take(chunk, s.n_head * s.head_dim_v);
        let proj = p.take(chunk, s.n_embd);
        let gate = p.take(chunk, s.n_ff);
        let up = p.take(chunk, s.n_ff);
        let scores = p.take(threads, ctx);
        let logits = p.take(logit_rows, s.n_vocab);
        if p.overflow {
            return Err(LayoutError::Overflow);
        }
        let widest = s.n_embd.max(s.n_ff).max(s.n_head * s.head_dim_v);
        // Every activation format (Q8_0, Q8_1, Q8_K, f16, f32) takes at most 4 bytes a value.
        let per_row = widest.checked_mul(4).ok_or(LayoutError::Overflow)?;
        let quant_scratch_bytes = per_row.checked_mul(chunk).ok_or(LayoutError::Overflow)?;
        Ok(Layout {
            limits,
            x,
            xn,
            q,
            k,
            v,
            att,
            proj,
            gate,
            up,
            scores,
            logits,
            arena_len: p.next,
            quant_scratch_bytes,
        })
    }
}

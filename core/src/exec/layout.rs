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
/// Each region has a lifetime in the phases of the forward pass (embed, attention norm, QKV,
/// attention, gate, output projection, FFN, head); regions whose lifetimes are disjoint share
/// bytes (the FFN's `gate`/`up` reuse the attention buffers, for instance).
///
/// Shapes are per chunk of `chunk` rows:
/// ```text
/// x      (chunk, n_embd)              residual stream
/// xn     (chunk, n_embd)              normed input of a sub-block
/// q      (chunk, n_head,    head_dim)
/// k      (chunk, n_head_kv, head_dim)
/// v      (chunk, n_head_kv, head_dim_v)
/// att    (chunk, n_head,    head_dim_v) attention output
/// ogate  (chunk, n_head,    head_dim_v) attention output gate (glimmer; empty otherwise)
/// proj   (chunk, n_embd)              output of attn_output / ffn_down
/// gate   (chunk, n_ff)
/// up     (chunk, n_ff)
/// scores (rows, unit)                 attention scratch: rows = max(threads · 2 · group, n_head),
///                                     unit = head_dim + (ctx / 64 + 1) · 65 + 4
///                                     (`cpu::attention_scratch_len`)
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
    /// Attention output gate (empty for models without one).
    pub ogate: Buf,
    /// Projection output.
    pub proj: Buf,
    /// FFN gate.
    pub gate: Buf,
    /// FFN up.
    pub up: Buf,
    /// Attention scratch: prepared queries, scores and softmax sums
    /// ([`crate::cpu::attention_scratch_len`]).
    pub scores: Buf,
    /// Logits.
    pub logits: Buf,
    /// Total `f32` elements of the arena.
    pub arena_len: usize,
    /// What the regions would take with no sharing (for reports).
    pub unshared_len: usize,
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

/// One buffer to place: its length in `f32`s and the phases `[first, last]` of the forward pass
/// in which it holds live data.
#[derive(Clone, Copy)]
struct Item {
    len: usize,
    first: u8,
    last: u8,
}

/// Phases of one forward chunk, in order. A buffer is live from the phase that writes it to the
/// last phase that reads it; two buffers whose phase ranges are disjoint may share bytes.
mod phase {
    pub const EMBED: u8 = 0;
    pub const ATTN_NORM: u8 = 1;
    pub const QKV: u8 = 2;
    pub const ATTENTION: u8 = 3;
    pub const GATE: u8 = 4;
    pub const WO: u8 = 5;
    pub const FFN_UP: u8 = 7;
    pub const FFN_DOWN: u8 = 8;
    pub const LOGITS: u8 = 9;
}

/// Regions are 16 `f32`s (64 bytes) aligned, for SIMD and cache lines.
const ALIGN: usize = 16;

/// Places `items` into one arena: largest first, each at the lowest aligned offset that does not
/// collide with an already placed item whose lifetime overlaps its own. Returns the offsets and
/// the arena length, or `None` on overflow.
fn pack<const N: usize>(items: &[Item; N]) -> Option<([usize; N], usize)> {
    let mut order: [usize; N] = core::array::from_fn(|i| i);
    order.sort_unstable_by(|&a, &b| items[b].len.cmp(&items[a].len).then(a.cmp(&b)));
    let mut off = [usize::MAX; N];
    let mut end = 0usize;
    for &i in &order {
        let it = items[i];
        let mut at = 0usize;
        // Restart the scan whenever the candidate moves: placed items are few.
        'scan: loop {
            for (j, o) in off.iter().enumerate() {
                if *o == usize::MAX || items[j].len == 0 || it.len == 0 {
                    continue;
                }
                let lives_overlap = it.first <= items[j].last && items[j].first <= it.last;
                let o_end = o.checked_add(items[j].len)?;
                let at_end = at.checked_add(it.len)?;
                if lives_overlap && at < o_end && *o < at_end {
                    at = o_end.checked_add(ALIGN - 1)? & !(ALIGN - 1);
                    continue 'scan;
                }
            }
            break;
        }
        off[i] = at;
        end = end.max(at.checked_add(it.len)?);
    }
    Some((off, end))
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
        use phase::*;
        let rows = |r: usize, w: usize| r.checked_mul(w).ok_or(LayoutError::Overflow);
        let og_rows = if s.attn_gate { chunk } else { 0 };
        let items = [
            // x: the residual stream lives through the whole chunk.
            Item {
                len: rows(chunk, s.n_embd)?,
                first: EMBED,
                last: LOGITS,
            },
            // xn: normed input of attention (read again by the gate), of the FFN, of the head.
            Item {
                len: rows(chunk, s.n_embd)?,
                first: ATTN_NORM,
                last: LOGITS,
            },
            Item {
                len: rows(chunk, s.q_dim())?,
                first: QKV,
                last: ATTENTION,
            },
            Item {
                len: rows(chunk, s.k_dim())?,
                first: QKV,
                last: ATTENTION,
            },
            Item {
                len: rows(chunk, s.v_dim())?,
                first: QKV,
                last: ATTENTION,
            },
            Item {
                len: rows(chunk, s.n_head * s.head_dim_v)?,
                first: ATTENTION,
                last: WO,
            },
            // ogate: computed with Q, K and V (one matmul call), read after attention.
            Item {
                len: rows(og_rows, s.n_head * s.head_dim_v)?,
                first: QKV,
                last: GATE,
            },
            // proj: output of attn_output, then of ffn_down.
            Item {
                len: rows(chunk, s.n_embd)?,
                first: WO,
                last: FFN_DOWN,
            },
            Item {
                len: rows(chunk, s.n_ff)?,
                first: FFN_UP,
                last: FFN_DOWN,
            },
            Item {
                len: rows(chunk, s.n_ff)?,
                first: FFN_UP,
                last: FFN_DOWN,
            },
            Item {
                len: crate::cpu::attention_scratch_len(
                    s.n_head,
                    s.n_head_kv,
                    s.head_dim,
                    ctx,
                    threads,
                )
                .ok_or(LayoutError::Overflow)?,
                first: ATTENTION,
                last: ATTENTION,
            },
            Item {
                len: rows(logit_rows, s.n_vocab)?,
                first: LOGITS,
                last: LOGITS,
            },
        ];
        let (o, arena_len) = pack(&items).ok_or(LayoutError::Overflow)?;
        let buf = |i: usize| Buf {
            off: if items[i].len == 0 { 0 } else { o[i] },
            len: items[i].len,
        };
        let (x, xn, q, k, v, att, ogate, proj, gate, up, scores, logits) = (
            buf(0),
            buf(1),
            buf(2),
            buf(3),
            buf(4),
            buf(5),
            buf(6),
            buf(7),
            buf(8),
            buf(9),
            buf(10),
            buf(11),
        );
        let unshared: usize = items.iter().map(|i| i.len).sum();
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
            ogate,
            proj,
            gate,
            up,
            scores,
            logits,
            arena_len,
            unshared_len: unshared,
            quant_scratch_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_shares_only_disjoint_lifetimes() {
        let items = [
            Item {
                len: 100,
                first: 0,
                last: 9,
            },
            Item {
                len: 50,
                first: 2,
                last: 3,
            },
            Item {
                len: 70,
                first: 7,
                last: 8,
            },
            Item {
                len: 30,
                first: 3,
                last: 5,
            },
            Item {
                len: 0,
                first: 4,
                last: 4,
            },
        ];
        let (off, end) = pack(&items).unwrap();
        for i in 0..items.len() {
            assert_eq!(off[i] % ALIGN, 0);
            for j in 0..i {
                let (a, b) = (items[i], items[j]);
                if a.len == 0 || b.len == 0 || a.last < b.first || b.last < a.first {
                    continue;
                }
                let disjoint = off[i] + a.len <= off[j] || off[j] + b.len <= off[i];
                assert!(disjoint, "{i} and {j} live together but overlap");
            }
        }
        // The 70 (phases 7-8) fits where the 50 and 30 (phases 2-5) were.
        assert!(end < 100 + 50 + 70 + 30, "{end}");
        assert!(end >= 100 + 70);
    }
}

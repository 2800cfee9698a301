//! The forward pass, written once against [`Backend`].

use crate::model::{Arch, LayerKind, ModelSpec, Weights};

use super::{AttnParams, Backend, BranchEnd, Layout, QkPrep, MAX_CHUNK};

/// Which rows of logits a forward call computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogitRows {
    /// None (prefill chunks whose logits nobody reads).
    None,
    /// The last token only (decoding).
    Last,
    /// Every token of the chunk (scoring, speculative verification, golden tests).
    All,
}

/// Why a forward call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForwardError<E> {
    /// A kernel failed.
    Backend(E),
    /// No tokens, or more than the layout's chunk.
    BadChunk {
        /// Tokens passed.
        n: usize,
        /// The layout's chunk.
        chunk: usize,
    },
    /// More logit rows asked for than the layout holds.
    TooManyLogitRows,
    /// The tokens would run past the context the layout was made for.
    ContextFull {
        /// Position of the first token.
        pos: u32,
        /// Tokens passed.
        n: usize,
        /// Context length.
        ctx: usize,
    },
    /// A token id is not below the vocabulary size.
    BadToken(u32),
}

impl<E> From<E> for ForwardError<E> {
    fn from(e: E) -> Self {
        Self::Backend(e)
    }
}

/// One model bound to its weights and arena layout: runs chunks of tokens through the graph.
pub struct Model<'m, 'w> {
    /// Hyperparameters.
    pub spec: &'m ModelSpec,
    /// Weights.
    pub weights: &'m Weights<'w>,
    /// Arena layout.
    pub layout: &'m Layout,
}

impl Model<'_, '_> {
    /// Runs `tokens` (at positions `pos0..`) through the model, filling the KV cache, and leaves
    /// the requested logits in `layout.logits` (row `i` for the `i`-th requested row).
    ///
    /// Returns the number of logit rows written.
    pub fn forward<B: Backend>(
        &self,
        b: &mut B,
        tokens: &[u32],
        pos0: u32,
        rows: LogitRows,
    ) -> Result<usize, ForwardError<B::Error>> {
        let s = self.spec;
        let l = self.layout;
        let n = tokens.len();
        if n == 0 || n > l.limits.chunk {
            return Err(ForwardError::BadChunk {
                n,
                chunk: l.limits.chunk,
            });
        }
        let full = ForwardError::ContextFull {
            pos: pos0,
            n,
            ctx: l.limits.ctx,
        };
        let end = (pos0 as usize).checked_add(n).ok_or(full)?;
        if end > l.limits.ctx {
            return Err(full);
        }
        if let Some(&t) = tokens.iter().find(|&&t| t as usize >= s.n_vocab) {
            return Err(ForwardError::BadToken(t));
        }
        let (out_first, out_rows) = match rows {
            LogitRows::None => (n, 0),
            LogitRows::Last => (n - 1, 1),
            LogitRows::All => (0, n),
        };
        if out_rows > l.limits.logit_rows {
            return Err(ForwardError::TooManyLogitRows);
        }
        let mut pos_buf = [0u32; MAX_CHUNK];
        for (i, p) in pos_buf.iter_mut().take(n).enumerate() {
            *p = pos0 + i as u32;
        }
        let positions = &pos_buf[..n];

        let x = l.x.prefix(n * s.n_embd);
        let xn = l.xn.prefix(n * s.n_embd);
        let q = l.q.prefix(n * s.q_dim());
        let k = l.k.prefix(n * s.k_dim());
        let v = l.v.prefix(n * s.v_dim());
        let att = l.att.prefix(n * s.n_head * s.head_dim_v);
        let proj = l.proj.prefix(n * s.n_embd);
        let gate = l.gate.prefix(n * s.n_ff);
        let up = l.up.prefix(n * s.n_ff);

        let w = self.weights;
        b.embed(&w.tok_embd, tokens, x)?;
        if let Some(scale) = s.embd_scale {
            b.scale(x, scale)?;
        }
        if s.embd_norm {
            b.rmsnorm(x, None, s.n_embd, s.eps, x)?;
        }

        for (il, lw) in w.layers.iter().enumerate() {
            // Attention block. After the first layer, the previous layer's residual add has
            // already normed x into xn (`add_rmsnorm`).
            if il == 0 {
                b.rmsnorm(x, Some(&lw.attn_norm), s.n_embd, s.eps, xn)?;
            }
            // Q, K, V (and Glimmer's output gate) read the same normed input: one call, with
            // the Q/K norms, RoPE and the KV store after it.
            let og = l.ogate.prefix(n * s.n_head * s.head_dim_v);
            let prep = QkPrep {
                layer: il,
                n_head: s.n_head,
                n_head_kv: s.n_head_kv,
                head_dim: s.head_dim,
                norm: s
                    .qk_norm
                    .then_some((lw.q_norm.as_ref(), lw.k_norm.as_ref(), s.eps)),
                rope: s
                    .layer_uses_rope(il)
                    .then(|| (s.rope_dim, s.rope_base_for(il), s.rope_style)),
            };
            match &lw.attn_gate {
                Some(g) => {
                    let ws = [&lw.wq, &lw.wk, &lw.wv, g];
                    b.qkv_attn_inputs(&ws, xn, q, k, v, Some(og), &prep, positions)?
                }
                None => {
                    let ws = [&lw.wq, &lw.wk, &lw.wv];
                    b.qkv_attn_inputs(&ws, xn, q, k, v, None, &prep, positions)?
                }
            }
            // gemma3 scales Q before attention (as llama.cpp does); llama scales inside.
            let scale = if s.arch == Arch::Gemma3 {
                b.scale(q, s.attn_scale)?;
                1.0
            } else {
                s.attn_scale
            };
            let window = match s.layer_kind(il) {
                LayerKind::Global => None,
                LayerKind::Sliding { window } => Some(window),
            };
            let p = AttnParams {
                layer: il,
                n_head: s.n_head,
                n_head_kv: s.n_head_kv,
                head_dim: s.head_dim,
                head_dim_v: s.head_dim_v,
                scale,
                window,
            };
            // Attention (gated where the model has an output gate), then the output
            // projection, the post-attention norm (where the model has one), the residual
            // add, and the FFN block's norm.
            let (d, eps, peps) = (s.n_embd, s.eps, s.post_norm_eps);
            let post = lw.post_attn_norm.as_ref().map(|pn| (pn, peps));
            let fnorm = Some(&lw.ffn_norm);
            let og = lw.attn_gate.as_ref().map(|_| og);
            let end = BranchEnd {
                y: proj,
                x,
                post,
                weight: fnorm,
                dim: d,
                eps,
                out: xn,
            };
            b.attention_project(&p, q, positions, og, att, &lw.wo, &end)?;
            b.matmul_gated(&lw.w_gate, &lw.w_up, xn, n, gate, up, s.activation)?;
            // The down projection, the post-FFN norm, the residual add, and the next layer's
            // attention norm (the last layer's output norm takes only the rows whose logits
            // are wanted, below).
            let post = lw.post_ffn_norm.as_ref().map(|pn| (pn, peps));
            match w.layers.get(il + 1) {
                Some(next) => {
                    let end = BranchEnd {
                        y: proj,
                        x,
                        post,
                        weight: Some(&next.attn_norm),
                        dim: d,
                        eps,
                        out: xn,
                    };
                    b.matmul_add_rmsnorm(&lw.w_down, gate, n, &end)?
                }
                None => {
                    b.matmul(&lw.w_down, gate, n, proj)?;
                    if let Some((pn, peps)) = post {
                        b.rmsnorm(proj, Some(pn), d, peps, proj)?;
                    }
                    b.add(x, proj)?
                }
            }
        }

        if out_rows > 0 {
            let xo = x.rows(out_first, out_rows, s.n_embd);
            let xno = xn.prefix(out_rows * s.n_embd);
            b.rmsnorm(xo, Some(&w.output_norm), s.n_embd, s.eps, xno)?;
            let logits = l.logits.prefix(out_rows * s.n_vocab);
            b.matmul(&w.output, xno, out_rows, logits)?;
            if let Some((cap, scale)) = s.logit_softcap {
                b.softcap(logits, cap, scale)?;
            }
        }
        Ok(out_rows)
    }
}

//! The [`Backend`] trait: the kernel set the forward pass is written against.

use crate::model::{Activation, RopeStyle, Tensor};

/// A region of the activation arena, in `f32` elements.
///
/// Backends own the arena; the forward pass only names regions of it. Two regions passed to one
/// op must either be identical (an in-place op, where the op allows it) or disjoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buf {
    /// First element.
    pub off: usize,
    /// Length in elements.
    pub len: usize,
}

impl Buf {
    /// The first `len` elements of this region.
    pub const fn prefix(self, len: usize) -> Buf {
        Buf { off: self.off, len }
    }

    /// `rows` rows of `width` elements starting at row `row`.
    pub const fn rows(self, row: usize, rows: usize, width: usize) -> Buf {
        Buf {
            off: self.off + row * width,
            len: rows * width,
        }
    }

    /// Whether the two regions share no element.
    pub const fn disjoint(self, other: Buf) -> bool {
        self.off + self.len <= other.off || other.off + other.len <= self.off
    }
}

/// Shape and masking of one attention call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttnParams {
    /// Decoder layer (selects the KV cache).
    pub layer: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads; query head `h` reads KV head `h / (n_head / n_head_kv)`.
    pub n_head_kv: usize,
    /// Key width per head.
    pub head_dim: usize,
    /// Value width per head.
    pub head_dim_v: usize,
    /// Multiplier on `q·k` before the softmax.
    pub scale: f32,
    /// Sliding window: a key at `p_k` is visible to a query at `p_q` iff `p_q - p_k < window`.
    pub window: Option<u32>,
}

/// What [`Backend::attn_inputs`] does to one layer's Q, K and V before attention.
#[derive(Clone, Copy, Debug)]
pub struct QkPrep<'a, 'w> {
    /// Decoder layer (selects the KV cache).
    pub layer: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads.
    pub n_head_kv: usize,
    /// Query and key width per head.
    pub head_dim: usize,
    /// Per-head RMSNorm of Q and K first: `(q gain, k gain, eps)` (a gain of `None` is 1);
    /// `None` for models without Q/K norms.
    pub norm: Option<(Option<&'a Tensor<'w>>, Option<&'a Tensor<'w>>, f32)>,
    /// Then RoPE on Q and K: `(rope_dim, base, style)`; `None` on layers without it.
    pub rope: Option<(usize, f32, RopeStyle)>,
}

/// What follows a decoder block's branch once its output projection `y` is written: the
/// branch's post-norm (where the model has one), the residual add into `x`, and the next norm
/// into `out`, row by row (rows of `dim`). [`Backend::matmul_add_rmsnorm`] and
/// [`Backend::attention_project`] take it; [`Backend::branch_norms`] is the part after the
/// projection as plain calls.
#[derive(Clone, Copy, Debug)]
pub struct BranchEnd<'a, 'w> {
    /// The projection's output, `(rows, dim)`; with `post`, normed in place.
    pub y: Buf,
    /// The residual stream, `(rows, dim)`: `x += y`.
    pub x: Buf,
    /// The branch's post-norm: `(gain, eps)`; `None` for models without one.
    pub post: Option<(&'a Tensor<'w>, f32)>,
    /// The next norm's gain (`None` is 1).
    pub weight: Option<&'a Tensor<'w>>,
    /// Row width: the model width.
    pub dim: usize,
    /// The next norm's epsilon.
    pub eps: f32,
    /// The next norm's output, `(rows, dim)`.
    pub out: Buf,
}

/// The kernels one forward pass needs.
///
/// All activations are row-major `f32` in the backend's arena; `rows` is the number of tokens in
/// the batch. Weights are [`Tensor`]s in any computable block format. After the backend has been
/// prepared for a plan, no method may allocate.
///
/// The CPU backend ([`crate::cpu::CpuBackend`]) is the reference every other backend is tested
/// against.
pub trait Backend {
    /// The backend's error type.
    type Error: Copy + core::fmt::Debug;

    /// `out[r] = table[tokens[r]]` (dequantized), for each token.
    fn embed(&mut self, table: &Tensor<'_>, tokens: &[u32], out: Buf) -> Result<(), Self::Error>;

    /// Row-wise RMSNorm over rows of `dim`: `out = x / rms(x) · weight` (weight omitted: scale 1).
    /// `x == out` is allowed.
    fn rmsnorm(
        &mut self,
        x: Buf,
        weight: Option<&Tensor<'_>>,
        dim: usize,
        eps: f32,
        out: Buf,
    ) -> Result<(), Self::Error>;

    /// What ends a branch of a decoder block, row by row (rows of `e.dim`): with a post-norm,
    /// `e.y = rmsnorm(e.y) · post`; then the residual add `e.x += e.y`; then the next norm
    /// `e.out = rmsnorm(e.x) · e.weight` (epsilon `e.eps`). The default is
    /// [`Backend::rmsnorm`], [`Backend::add`] and [`Backend::rmsnorm`]; a GPU backend may do it
    /// all in one pass over the row (one launch instead of three).
    fn branch_norms(&mut self, e: &BranchEnd<'_, '_>) -> Result<(), Self::Error> {
        if let Some((post, post_eps)) = e.post {
            self.rmsnorm(e.y, Some(post), e.dim, post_eps, e.y)?;
        }
        self.add(e.x, e.y)?;
        self.rmsnorm(e.x, e.weight, e.dim, e.eps, e.out)
    }

    /// `out[r] = W · x[r]` for `rows` rows: `x` is `(rows, w.cols)`, `out` is `(rows, w.rows)`.
    fn matmul(&mut self, w: &Tensor<'_>, x: Buf, rows: usize, out: Buf) -> Result<(), Self::Error>;

    /// A branch's output projection and what follows it in a decoder block: `e.y = W · a`
    /// ([`Backend::matmul`], `e.y` of width `e.dim`), then [`Backend::branch_norms`]. That is the
    /// default; a GPU backend may run the norms in the tail of the matmul's own launch to save
    /// a launch and the wait on it (the CUDA backend can at one row; it is off by default
    /// there, having measured slower, see `CudaBackend::fuse_norm`).
    fn matmul_add_rmsnorm(
        &mut self,
        w: &Tensor<'_>,
        a: Buf,
        rows: usize,
        e: &BranchEnd<'_, '_>,
    ) -> Result<(), Self::Error> {
        self.matmul(w, a, rows, e.y)?;
        self.branch_norms(e)
    }

    /// Several matmuls over the same input: `outs[i][r] = ws[i] · x[r]`, each `outs[i]` of
    /// shape `(rows, ws[i].rows)`. All `ws` have `x`'s width. The default runs
    /// [`Backend::matmul`] once per weight; a backend may quantize `x` once and spread all the
    /// rows over one dispatch (the CPU backend does), which the forward pass uses for Q/K/V.
    fn matmul_many(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        rows: usize,
        outs: &[Buf],
    ) -> Result<(), Self::Error> {
        for (w, &o) in ws.iter().zip(outs) {
            self.matmul(w, x, rows, o)?;
        }
        Ok(())
    }

    /// A layer's Q, K, V (and output gate) projections of `x` into `q`, `k`, `v` (and
    /// `gate`), `ws` in that order, then [`Backend::attn_inputs`] on them. The default is
    /// [`Backend::matmul_many`] then [`Backend::attn_inputs`]; a GPU backend may do both in
    /// one launch.
    #[allow(clippy::too_many_arguments)]
    fn qkv_attn_inputs(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        q: Buf,
        k: Buf,
        v: Buf,
        gate: Option<Buf>,
        p: &QkPrep<'_, '_>,
        positions: &[u32],
    ) -> Result<(), Self::Error> {
        qkv_then_attn_inputs(self, ws, x, q, k, v, gate, p, positions)
    }

    /// The gated feed-forward input: `gate = act(W_gate · x) · (W_up · x)`, leaving `up` as
    /// scratch. The default is two matmuls and [`Backend::gated_act`]; a backend may compute
    /// matching row ranges of both matrices in one task and apply the activation there.
    #[allow(clippy::too_many_arguments)]
    fn matmul_gated(
        &mut self,
        w_gate: &Tensor<'_>,
        w_up: &Tensor<'_>,
        x: Buf,
        rows: usize,
        gate: Buf,
        up: Buf,
        act: Activation,
    ) -> Result<(), Self::Error> {
        self.matmul_many(&[w_gate, w_up], x, rows, &[gate, up])?;
        self.gated_act(gate, up, act)
    }

    /// Rotates the first `rope_dim` dims of each head in place; row `r` is at `positions[r]`.
    /// `x` is `(positions.len(), n_heads, head_dim)`.
    #[allow(clippy::too_many_arguments)]
    fn rope(
        &mut self,
        x: Buf,
        n_heads: usize,
        head_dim: usize,
        rope_dim: usize,
        positions: &[u32],
        base: f32,
        style: RopeStyle,
    ) -> Result<(), Self::Error>;

    /// Stores keys and values of `positions.len()` tokens in layer `layer`'s cache.
    fn kv_store(
        &mut self,
        layer: usize,
        k: Buf,
        v: Buf,
        positions: &[u32],
    ) -> Result<(), Self::Error>;

    /// Everything between the Q/K/V projections and attention: the per-head Q and K norms and
    /// RoPE that `p` asks for (in that order, in place on `q` and `k`), then the KV store of
    /// `k` and `v` at `positions`. The default calls [`Backend::rmsnorm`], [`Backend::rope`]
    /// and [`Backend::kv_store`]; a GPU backend may do it in one launch.
    fn attn_inputs(
        &mut self,
        p: &QkPrep<'_, '_>,
        q: Buf,
        k: Buf,
        v: Buf,
        positions: &[u32],
    ) -> Result<(), Self::Error> {
        if let Some((qn, kn, eps)) = p.norm {
            self.rmsnorm(q, qn, p.head_dim, eps, q)?;
            self.rmsnorm(k, kn, p.head_dim, eps, k)?;
        }
        if let Some((rope_dim, base, style)) = p.rope {
            self.rope(q, p.n_head, p.head_dim, rope_dim, positions, base, style)?;
            self.rope(k, p.n_head_kv, p.head_dim, rope_dim, positions, base, style)?;
        }
        self.kv_store(p.layer, k, v, positions)
    }

    /// Causal attention of `q` (`(rows, n_head, head_dim)`, rows at `positions`) over the
    /// layer's cache, which already holds every position up to each query's own.
    /// Writes `(rows, n_head, head_dim_v)` to `out`.
    fn attention(
        &mut self,
        p: &AttnParams,
        q: Buf,
        positions: &[u32],
        out: Buf,
    ) -> Result<(), Self::Error>;

    /// [`Backend::attention`] with an output gate: `out *= sigmoid(gate)` after it (`gate`
    /// has `out`'s shape). The default calls [`Backend::attention`] then
    /// [`Backend::sigmoid_mul`]; a GPU backend may gate while it writes `out`.
    fn attention_gated(
        &mut self,
        p: &AttnParams,
        q: Buf,
        positions: &[u32],
        gate: Buf,
        out: Buf,
    ) -> Result<(), Self::Error> {
        self.attention(p, q, positions, out)?;
        self.sigmoid_mul(out, gate)
    }

    /// A layer's attention and its output projection: [`Backend::attention`] (with `gate`,
    /// [`Backend::attention_gated`]) of `q` into `att`, then [`Backend::matmul_add_rmsnorm`]
    /// of `wo` over `att` with `e`. The default is those two calls ([`attend_then_project`]);
    /// a GPU backend may run attention in front of the projection in one launch.
    #[allow(clippy::too_many_arguments)]
    fn attention_project(
        &mut self,
        p: &AttnParams,
        q: Buf,
        positions: &[u32],
        gate: Option<Buf>,
        att: Buf,
        wo: &Tensor<'_>,
        e: &BranchEnd<'_, '_>,
    ) -> Result<(), Self::Error> {
        attend_then_project(self, p, q, positions, gate, att, wo, e)
    }

    /// `gate = act(gate) · up`, element-wise.
    fn gated_act(&mut self, gate: Buf, up: Buf, act: Activation) -> Result<(), Self::Error>;

    /// `x *= sigmoid(gate)`, element-wise.
    fn sigmoid_mul(&mut self, x: Buf, gate: Buf) -> Result<(), Self::Error>;

    /// `x = cap · tanh(x · scale / cap)`, element-wise (logit softcap).
    fn softcap(&mut self, x: Buf, cap: f32, scale: f32) -> Result<(), Self::Error>;

    /// `x += y`, element-wise.
    fn add(&mut self, x: Buf, y: Buf) -> Result<(), Self::Error>;

    /// `x *= s`, element-wise.
    fn scale(&mut self, x: Buf, s: f32) -> Result<(), Self::Error>;

    /// Copies a region back to host memory.
    fn read(&mut self, src: Buf, dst: &mut [f32]) -> Result<(), Self::Error>;
}

/// [`Backend::qkv_attn_inputs`]' default as two calls, [`Backend::matmul_many`] then
/// [`Backend::attn_inputs`]: for a backend's own implementation to fall back to.
#[allow(clippy::too_many_arguments)]
pub fn qkv_then_attn_inputs<B: Backend + ?Sized>(
    b: &mut B,
    ws: &[&Tensor<'_>],
    x: Buf,
    q: Buf,
    k: Buf,
    v: Buf,
    gate: Option<Buf>,
    p: &QkPrep<'_, '_>,
    positions: &[u32],
) -> Result<(), B::Error> {
    let outs = [q, k, v, gate.unwrap_or(v)];
    let n = 3 + usize::from(gate.is_some());
    b.matmul_many(ws, x, positions.len(), &outs[..n])?;
    b.attn_inputs(p, q, k, v, positions)
}

/// [`Backend::attention_project`]'s default as two calls, [`Backend::attention`] (or
/// [`Backend::attention_gated`] with `gate`) then [`Backend::matmul_add_rmsnorm`]: for a
/// backend's own implementation to fall back to.
#[allow(clippy::too_many_arguments)]
pub fn attend_then_project<B: Backend + ?Sized>(
    b: &mut B,
    p: &AttnParams,
    q: Buf,
    positions: &[u32],
    gate: Option<Buf>,
    att: Buf,
    wo: &Tensor<'_>,
    e: &BranchEnd<'_, '_>,
) -> Result<(), B::Error> {
    match gate {
        Some(g) => b.attention_gated(p, q, positions, g, att)?,
        None => b.attention(p, q, positions, att)?,
    }
    b.matmul_add_rmsnorm(wo, att, positions.len(), e)
}

//! Per-op timing of a forward pass: [`Profiled`] wraps any [`Backend`] and adds the wall time
//! of each call to an [`OpTimes`] table, keyed by op.
//!
//! For the CPU backend the time of a call is the time of the op (it returns when the op is
//! done). Used by `glimmer bench --profile`; the table is a fixed array, so profiling does not
//! allocate either.

use std::time::{Duration, Instant};

use glimmer_core::exec::{AttnParams, Backend, BranchEnd, Buf, QkPrep};
use glimmer_core::model::{Activation, RopeStyle, Tensor};

/// Output rows from which a matmul is counted apart, as [`Op::MatmulWide`]: no layer weight
/// of the models we run is this tall, every vocabulary is.
pub const WIDE_MATMUL_ROWS: usize = 16_384;

/// The ops [`Profiled`] tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Token embedding lookup.
    Embed,
    /// RMSNorm.
    RmsNorm,
    /// A residual add with the next RMSNorm (`Backend::add_rmsnorm`), and with a post-norm of
    /// the branch first (`Backend::norm_add_rmsnorm`).
    AddNorm,
    /// A single matmul of fewer than [`WIDE_MATMUL_ROWS`] output rows (attention output,
    /// FFN down).
    Matmul,
    /// A single matmul of at least [`WIDE_MATMUL_ROWS`] output rows (the LM head).
    MatmulWide,
    /// Several matmuls over one input (Q/K/V).
    MatmulMany,
    /// Gate and up with the activation (FFN input).
    MatmulGated,
    /// Rotary embedding.
    Rope,
    /// KV-cache store.
    KvStore,
    /// Q/K norms, RoPE and the KV store in one call (`Backend::attn_inputs`).
    AttnInputs,
    /// Attention.
    Attention,
    /// Element-wise ops: gated activation, sigmoid gate, softcap, add, scale.
    Elementwise,
    /// Copies back to the host.
    Read,
}

impl Op {
    /// Every op, in table order.
    pub const ALL: [Op; 13] = [
        Op::Embed,
        Op::RmsNorm,
        Op::AddNorm,
        Op::Matmul,
        Op::MatmulWide,
        Op::MatmulMany,
        Op::MatmulGated,
        Op::Rope,
        Op::KvStore,
        Op::AttnInputs,
        Op::Attention,
        Op::Elementwise,
        Op::Read,
    ];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Op::Embed => "embed",
            Op::RmsNorm => "rmsnorm",
            Op::AddNorm => "[norm +] add + rmsnorm",
            Op::Matmul => "matmul",
            Op::MatmulWide => "matmul, wide (head)",
            Op::MatmulMany => "matmul qkv",
            Op::MatmulGated => "matmul gate+up+act",
            Op::Rope => "rope",
            Op::KvStore => "kv store",
            Op::AttnInputs => "q/k norm+rope+kv store",
            Op::Attention => "attention",
            Op::Elementwise => "element-wise",
            Op::Read => "read",
        }
    }
}

/// Accumulated time and call count per [`Op`].
#[derive(Clone, Copy, Debug, Default)]
pub struct OpTimes {
    time: [Duration; Op::ALL.len()],
    calls: [u64; Op::ALL.len()],
}

impl OpTimes {
    /// Time spent in `op` so far.
    pub fn time(&self, op: Op) -> Duration {
        self.time[op as usize]
    }

    /// Calls of `op` so far.
    pub fn calls(&self, op: Op) -> u64 {
        self.calls[op as usize]
    }

    /// Time in all ops.
    pub fn total(&self) -> Duration {
        self.time.iter().sum()
    }

    /// The sum of two tables.
    pub fn merged(&self, other: &OpTimes) -> OpTimes {
        let mut out = *self;
        for i in 0..Op::ALL.len() {
            out.time[i] += other.time[i];
            out.calls[i] += other.calls[i];
        }
        out
    }

    fn add(&mut self, op: Op, d: Duration) {
        self.time[op as usize] += d;
        self.calls[op as usize] += 1;
    }

    /// A table of every op with time, share, calls and time per call (µs).
    pub fn table(&self) -> String {
        let total = self.total().as_secs_f64().max(1e-12);
        let mut s = format!(
            "{:<20} {:>10} {:>7} {:>9} {:>10}\n",
            "op", "ms", "share", "calls", "µs/call"
        );
        for op in Op::ALL {
            let t = self.time(op).as_secs_f64();
            let n = self.calls(op);
            if n == 0 {
                continue;
            }
            s += &format!(
                "{:<20} {:>10.2} {:>6.1}% {:>9} {:>10.2}\n",
                op.name(),
                t * 1e3,
                100.0 * t / total,
                n,
                t * 1e6 / n as f64
            );
        }
        s
    }
}

/// A [`Backend`] that times every call of the one it borrows.
pub struct Profiled<'b, 't, B> {
    inner: &'b mut B,
    times: &'t mut OpTimes,
    fence: Option<fn(&mut B)>,
}

impl<'b, 't, B: Backend> Profiled<'b, 't, B> {
    /// Wraps `inner`, adding to `times`. Right for backends whose calls return when the work is
    /// done (the CPU backend).
    pub fn new(inner: &'b mut B, times: &'t mut OpTimes) -> Self {
        Profiled {
            inner,
            times,
            fence: None,
        }
    }

    /// As [`Profiled::new`] for an asynchronous backend (a GPU stream): `fence` waits until
    /// the backend's queued work is done, and runs after every op before its clock stops.
    pub fn with_fence(inner: &'b mut B, times: &'t mut OpTimes, fence: fn(&mut B)) -> Self {
        Profiled {
            inner,
            times,
            fence: Some(fence),
        }
    }

    fn timed<T>(&mut self, op: Op, f: impl FnOnce(&mut B) -> T) -> T {
        let t0 = Instant::now();
        let r = f(self.inner);
        if let Some(fence) = self.fence {
            fence(self.inner);
        }
        self.times.add(op, t0.elapsed());
        r
    }
}

impl<B: Backend> Backend for Profiled<'_, '_, B> {
    type Error = B::Error;

    fn embed(&mut self, table: &Tensor<'_>, tokens: &[u32], out: Buf) -> Result<(), B::Error> {
        self.timed(Op::Embed, |b| b.embed(table, tokens, out))
    }

    fn rmsnorm(
        &mut self,
        x: Buf,
        weight: Option<&Tensor<'_>>,
        dim: usize,
        eps: f32,
        out: Buf,
    ) -> Result<(), B::Error> {
        self.timed(Op::RmsNorm, |b| b.rmsnorm(x, weight, dim, eps, out))
    }

    fn branch_norms(&mut self, e: &BranchEnd<'_, '_>) -> Result<(), B::Error> {
        self.timed(Op::AddNorm, |b| b.branch_norms(e))
    }

    fn matmul(&mut self, w: &Tensor<'_>, x: Buf, rows: usize, out: Buf) -> Result<(), B::Error> {
        let op = if w.rows >= WIDE_MATMUL_ROWS {
            Op::MatmulWide
        } else {
            Op::Matmul
        };
        self.timed(op, |b| b.matmul(w, x, rows, out))
    }

    fn matmul_many(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        rows: usize,
        outs: &[Buf],
    ) -> Result<(), B::Error> {
        self.timed(Op::MatmulMany, |b| b.matmul_many(ws, x, rows, outs))
    }

    fn matmul_gated(
        &mut self,
        w_gate: &Tensor<'_>,
        w_up: &Tensor<'_>,
        x: Buf,
        rows: usize,
        gate: Buf,
        up: Buf,
        act: Activation,
    ) -> Result<(), B::Error> {
        self.timed(Op::MatmulGated, |b| {
            b.matmul_gated(w_gate, w_up, x, rows, gate, up, act)
        })
    }

    fn rope(
        &mut self,
        x: Buf,
        n_heads: usize,
        head_dim: usize,
        rope_dim: usize,
        positions: &[u32],
        base: f32,
        style: RopeStyle,
    ) -> Result<(), B::Error> {
        self.timed(Op::Rope, |b| {
            b.rope(x, n_heads, head_dim, rope_dim, positions, base, style)
        })
    }

    fn kv_store(
        &mut self,
        layer: usize,
        k: Buf,
        v: Buf,
        positions: &[u32],
    ) -> Result<(), B::Error> {
        self.timed(Op::KvStore, |b| b.kv_store(layer, k, v, positions))
    }

    fn attn_inputs(
        &mut self,
        p: &QkPrep<'_, '_>,
        q: Buf,
        k: Buf,
        v: Buf,
        positions: &[u32],
    ) -> Result<(), B::Error> {
        self.timed(Op::AttnInputs, |b| b.attn_inputs(p, q, k, v, positions))
    }

    fn attention(
        &mut self,
        p: &AttnParams,
        q: Buf,
        positions: &[u32],
        out: Buf,
    ) -> Result<(), B::Error> {
        self.timed(Op::Attention, |b| b.attention(p, q, positions, out))
    }

    fn attention_gated(
        &mut self,
        p: &AttnParams,
        q: Buf,
        positions: &[u32],
        gate: Buf,
        out: Buf,
    ) -> Result<(), B::Error> {
        self.timed(Op::Attention, |b| {
            b.attention_gated(p, q, positions, gate, out)
        })
    }

    fn gated_act(&mut self, gate: Buf, up: Buf, act: Activation) -> Result<(), B::Error> {
        self.timed(Op::Elementwise, |b| b.gated_act(gate, up, act))
    }

    fn sigmoid_mul(&mut self, x: Buf, gate: Buf) -> Result<(), B::Error> {
        self.timed(Op::Elementwise, |b| b.sigmoid_mul(x, gate))
    }

    fn softcap(&mut self, x: Buf, cap: f32, scale: f32) -> Result<(), B::Error> {
        self.timed(Op::Elementwise, |b| b.softcap(x, cap, scale))
    }

    fn add(&mut self, x: Buf, y: Buf) -> Result<(), B::Error> {
        self.timed(Op::Elementwise, |b| b.add(x, y))
    }

    fn scale(&mut self, x: Buf, s: f32) -> Result<(), B::Error> {
        self.timed(Op::Elementwise, |b| b.scale(x, s))
    }

    fn read(&mut self, src: Buf, dst: &mut [f32]) -> Result<(), B::Error> {
        self.timed(Op::Read, |b| b.read(src, dst))
    }
}

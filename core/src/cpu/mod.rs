//! The CPU backend: the reference implementation of [`Backend`].
//!
//! It works in memory the host hands it: the `f32` activation arena laid out by
//! [`crate::exec::Layout`], a byte scratch for activations quantized to each weight's
//! dot-product format, and one session's view of the paged KV cache ([`SlotKv`]). It never
//! allocates.
//!
//! Matmuls quantize each activation row once to the weight's `vec_dot_type` (Q8_0, Q8_1 or Q8_K)
//! and take integer dot products per block, the way llama.cpp's CPU backend does, so both agree
//! to float-summation order.
//!
//! Matmuls and attention are spread over the host's threads through [`Parallel`]: matmuls by
//! weight rows (each task computes its rows for every activation row, so a prefill chunk reads
//! each weight tile once), attention by blocks of query rows × the query heads of a KV head,
//! or for a decode over a long context by blocks of positions. RMSNorm and RoPE split rows
//! between tasks from 8 rows up (prefill); the gated activation runs inside the gate/up
//! matmul's tasks; the other element-wise ops are cheap and run on the calling thread.

mod attention;
mod matmul;
pub mod ops;
mod shared;

pub use attention::scratch_len as attention_scratch_len;

use half::f16;

use core::sync::atomic::{AtomicBool, Ordering};

use crate::exec::{split_range, AttnParams, Backend, Buf, Parallel};
use crate::kv::{KvError, SlotKv};
use crate::model::{Activation, RopeStyle, Tensor};
use crate::plan::KvType;
use crate::quant::{self, Kernels, QuantError};

/// Why a CPU kernel refused its arguments.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuError {
    /// A region lies outside the arena, overlaps another, or has the wrong length.
    BadRegion,
    /// A quantized kernel failed.
    Quant(QuantError),
    /// A weight vector is not f32 or is misaligned.
    BadWeight,
    /// A KV position or layer is outside the cache.
    KvRange,
    /// A head is wider than the kernels support (512).
    HeadTooWide,
    /// The quantization scratch is too small for a row.
    ScratchTooSmall,
    /// A kernel running as a parallel task refused its arguments (after they were checked).
    TaskFailed,
    /// The KV cache refused a write (pool exhausted, bad geometry).
    Kv(KvError),
    /// Q8_0 KV storage needs heads whose widths are multiples of 32.
    KvHeadNotBlocked,
}

impl From<KvError> for CpuError {
    fn from(e: KvError) -> Self {
        match e {
            KvError::Range => Self::KvRange,
            e => Self::Kv(e),
        }
    }
}

impl From<QuantError> for CpuError {
    fn from(e: QuantError) -> Self {
        Self::Quant(e)
    }
}

/// The CPU backend over borrowed memory.
pub struct CpuBackend<'a> {
    arena: &'a mut [f32],
    scratch: &'a mut [u8],
    scores: Buf,
    kv: SlotKv<'a>,
    kernels: Kernels,
    par: &'a dyn Parallel,
}

impl<'a> CpuBackend<'a> {
    /// A backend over `arena` (at least `Layout::arena_len` values), `scratch`
    /// (at least `Layout::quant_scratch_bytes`) and one session's KV cache. `scores` is the arena region
    /// the attention kernel keeps its softmax rows in (`Layout::scores`).
    ///
    /// `kernels` picks the dot-product and quantizer implementations (scalar, AVX2, AVX-512
    /// VNNI, NEON, …): [`Kernels::scalar`] is the reference; the host selects faster ones from
    /// the CPU features it detected.
    ///
    /// `par` runs the parallel parts ([`crate::exec::Serial`] for one thread). Attention keeps
    /// queries, scores and softmax sums in `scores`, which should hold
    /// [`attention_scratch_len`] values (`Layout::scores` with `Limits::threads` set to
    /// `par.threads()`); with less, attention takes fewer heads or rows at a time, then fewer
    /// tasks (the results are the same), and needs at least one row of the context per task.
    pub fn new(
        arena: &'a mut [f32],
        scratch: &'a mut [u8],
        scores: Buf,
        kv: SlotKv<'a>,
        kernels: Kernels,
        par: &'a dyn Parallel,
    ) -> Self {
        CpuBackend {
            arena,
            scratch,
            scores,
            kv,
            kernels,
            par,
        }
    }

    /// The session's KV cache.
    pub fn kv(&self) -> &SlotKv<'a> {
        &self.kv
    }

    fn one(&mut self, b: Buf) -> Result<&mut [f32], CpuError> {
        let end = b.off.checked_add(b.len).ok_or(CpuError::BadRegion)?;
        self.arena.get_mut(b.off..end).ok_or(CpuError::BadRegion)
    }

    fn two(&mut self, a: Buf, b: Buf) -> Result<[&mut [f32]; 2], CpuError> {
        let ea = a.off.checked_add(a.len).ok_or(CpuError::BadRegion)?;
        let eb = b.off.checked_add(b.len).ok_or(CpuError::BadRegion)?;
        self.arena
            .get_disjoint_mut([a.off..ea, b.off..eb])
            .map_err(|_| CpuError::BadRegion)
    }
}

impl CpuBackend<'_> {
    /// [`matmul::matmul_many`] over arena regions.
    fn many(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        rows: usize,
        outs: &[Buf],
        act: Option<Activation>,
    ) -> Result<(), CpuError> {
        if ws.len() != outs.len() || ws.len() > matmul::MAX_PARTS {
            return Err(CpuError::BadRegion);
        }
        let (Some(&w0), Some(&o0)) = (ws.first(), outs.first()) else {
            return Err(CpuError::BadRegion);
        };
        let mut parts = [matmul::Part { w: w0, out: o0 }; matmul::MAX_PARTS];
        for ((p, &w), &out) in parts.iter_mut().zip(ws).zip(outs) {
            *p = matmul::Part { w, out };
        }
        matmul::matmul_many(
            &self.kernels,
            self.par,
            self.arena,
            x,
            &parts[..ws.len()],
            rows,
            self.scratch,
            act,
        )
    }
}

/// Rows at which the row-wise ops (RMSNorm, RoPE) start splitting rows between tasks: below
/// it (decode) a dispatch costs more than the op.
const PAR_ROWS: usize = 8;

/// Calls `f(i, row)` for every `width`-wide row `i` of `data`; with at least [`PAR_ROWS`]
/// rows, contiguous runs of rows go to the tasks of one dispatch. Rows are independent, so the
/// result does not depend on the split.
fn for_rows(
    par: &dyn Parallel,
    data: &mut [f32],
    width: usize,
    f: &(dyn Fn(usize, &mut [f32]) + Sync),
) -> Result<(), CpuError> {
    if width == 0 || !data.len().is_multiple_of(width) {
        return Err(CpuError::BadRegion);
    }
    let rows = data.len() / width;
    let tasks = par.threads().min(rows / PAR_ROWS).max(1);
    if tasks == 1 {
        for (i, row) in data.chunks_exact_mut(width).enumerate() {
            f(i, row);
        }
        return Ok(());
    }
    let sh = shared::Shared::new(data);
    let failed = AtomicBool::new(false);
    par.run(tasks, &|t| {
        let r = split_range(rows, tasks, 1, t);
        // SAFETY: `split_range` gives the tasks disjoint row ranges.
        match unsafe { sh.part(r.start * width..r.end * width) } {
            Some(d) => {
                for (j, row) in d.chunks_exact_mut(width).enumerate() {
                    f(r.start + j, row);
                }
            }
            None => failed.store(true, Ordering::Relaxed),
        }
    });
    if failed.load(Ordering::Relaxed) {
        return Err(CpuError::TaskFailed);
    }
    Ok(())
}

/// Writes one row of keys or values into the cache's storage units.
fn store_row(k: &Kernels, ty: KvType, src: &[f32], dst: &mut [u16]) -> Result<(), CpuError> {
    match ty {
        KvType::F16 => {
            if dst.len() != src.len() {
                return Err(CpuError::BadRegion);
            }
            for (d, &s) in dst.iter_mut().zip(src) {
                *d = f16::from_f32(s).to_bits();
            }
        }
        KvType::Q8_0 => {
            k.quantize_row(quant::GgmlType::Q8_0, src, bytemuck::cast_slice_mut(dst))?;
        }
    }
    Ok(())
}

fn f32_weight<'w>(t: &Tensor<'w>) -> Result<&'w [f32], CpuError> {
    t.as_f32().ok_or(CpuError::BadWeight)
}

impl Backend for CpuBackend<'_> {
    type Error = CpuError;

    fn embed(&mut self, table: &Tensor<'_>, tokens: &[u32], out: Buf) -> Result<(), CpuError> {
        let dim = table.cols;
        let o = self.one(out)?;
        if o.len() != tokens.len() * dim {
            return Err(CpuError::BadRegion);
        }
        for (row, &t) in o.chunks_exact_mut(dim).zip(tokens) {
            let src = table.row(t as usize).ok_or(CpuError::BadRegion)?;
            quant::dequantize_row(table.ty, src, row)?;
        }
        Ok(())
    }

    fn rmsnorm(
        &mut self,
        x: Buf,
        weight: Option<&Tensor<'_>>,
        dim: usize,
        eps: f32,
        out: Buf,
    ) -> Result<(), CpuError> {
        let w = match weight {
            Some(t) => Some(f32_weight(t)?),
            None => None,
        };
        if dim == 0
            || !x.len.is_multiple_of(dim)
            || out.len != x.len
            || w.is_some_and(|w| w.len() != dim)
        {
            return Err(CpuError::BadRegion);
        }
        let par = self.par;
        if x == out {
            let xs = self.one(x)?;
            for_rows(par, xs, dim, &|_, row| {
                ops::rmsnorm_row_inplace(row, w, eps)
            })
        } else {
            let [xs, os] = self.two(x, out)?;
            let xs = &*xs;
            for_rows(par, os, dim, &|i, or| {
                ops::rmsnorm_row(&xs[i * dim..(i + 1) * dim], w, eps, or)
            })
        }
    }

    fn matmul(&mut self, w: &Tensor<'_>, x: Buf, rows: usize, out: Buf) -> Result<(), CpuError> {
        let xe = x.off.checked_add(x.len).ok_or(CpuError::BadRegion)?;
        let oe = out.off.checked_add(out.len).ok_or(CpuError::BadRegion)?;
        let [xs, os] = self
            .arena
            .get_disjoint_mut([x.off..xe, out.off..oe])
            .map_err(|_| CpuError::BadRegion)?;
        matmul::matmul(&self.kernels, self.par, w, xs, rows, self.scratch, os)
    }

    fn matmul_many(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        rows: usize,
        outs: &[Buf],
    ) -> Result<(), CpuError> {
        self.many(ws, x, rows, outs, None)
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
    ) -> Result<(), CpuError> {
        self.many(&[w_gate, w_up], x, rows, &[gate, up], Some(act))
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
    ) -> Result<(), CpuError> {
        let width = n_heads * head_dim;
        if x.len != positions.len() * width || rope_dim > head_dim {
            return Err(CpuError::BadRegion);
        }
        if rope_dim / 2 > 256 {
            return Err(CpuError::HeadTooWide);
        }
        let par = self.par;
        let xs = self.one(x)?;
        for_rows(par, xs, width, &|i, row| {
            // The angles depend only on the position: once per row, for every head.
            let mut cs = [(0.0f32, 0.0f32); 256];
            let cs = &mut cs[..rope_dim / 2];
            ops::rope_angles(rope_dim, positions[i], base, cs);
            for head in row.chunks_exact_mut(head_dim) {
                ops::rope_apply(head, cs, style);
            }
        })
    }

    fn kv_store(
        &mut self,
        layer: usize,
        k: Buf,
        v: Buf,
        positions: &[u32],
    ) -> Result<(), CpuError> {
        let n = positions.len();
        if n == 0 || !k.len.is_multiple_of(n) || !v.len.is_multiple_of(n) {
            return Err(CpuError::BadRegion);
        }
        let (kd, vd) = (k.len / n, v.len / n);
        let ke = k.off.checked_add(k.len).ok_or(CpuError::BadRegion)?;
        let ve = v.off.checked_add(v.len).ok_or(CpuError::BadRegion)?;
        let ks = self.arena.get(k.off..ke).ok_or(CpuError::BadRegion)?;
        let vs = self.arena.get(v.off..ve).ok_or(CpuError::BadRegion)?;
        let ty = self.kv.geometry().ty;
        for ((kr, vr), &pos) in ks.chunks_exact(kd).zip(vs.chunks_exact(vd)).zip(positions) {
            let (kdst, vdst) = self.kv.row_mut(layer, pos as usize)?;
            store_row(&self.kernels, ty, kr, kdst)?;
            store_row(&self.kernels, ty, vr, vdst)?;
        }
        Ok(())
    }

    fn attention(
        &mut self,
        p: &AttnParams,
        q: Buf,
        positions: &[u32],
        out: Buf,
    ) -> Result<(), CpuError> {
        if p.head_dim > 512 || p.n_head_kv == 0 || !p.n_head.is_multiple_of(p.n_head_kv) {
            return Err(CpuError::HeadTooWide);
        }
        let qw = p.n_head * p.head_dim;
        let ow = p.n_head * p.head_dim_v;
        if q.len != positions.len() * qw || out.len != positions.len() * ow {
            return Err(CpuError::BadRegion);
        }
        let ty = self.kv.geometry().ty;
        if ty == KvType::Q8_0
            && (!p.head_dim.is_multiple_of(32) || !p.head_dim_v.is_multiple_of(32))
        {
            return Err(CpuError::KvHeadNotBlocked);
        }
        let max_pos = positions.iter().copied().max().unwrap_or(0) as usize;
        if max_pos >= self.kv.geometry().ctx {
            return Err(CpuError::KvRange);
        }
        let len = max_pos + 1;
        let qe = q.off.checked_add(q.len).ok_or(CpuError::BadRegion)?;
        let oe = out.off.checked_add(out.len).ok_or(CpuError::BadRegion)?;
        let se = self
            .scores
            .off
            .checked_add(self.scores.len)
            .ok_or(CpuError::BadRegion)?;
        let [qs, os, ss] = self
            .arena
            .get_disjoint_mut([q.off..qe, out.off..oe, self.scores.off..se])
            .map_err(|_| CpuError::BadRegion)?;
        let view = self.kv.layer(p.layer)?;
        // The storage (a ring for sliding layers) must still hold the oldest key any query of
        // this chunk can see.
        let first_pos = positions.iter().copied().min().unwrap_or(0) as usize;
        let oldest = match p.window {
            Some(w) => first_pos.saturating_sub((w as usize).saturating_sub(1)),
            None => 0,
        };
        if len - oldest > view.cap {
            return Err(CpuError::KvRange);
        }
        if positions.is_empty() {
            return Err(CpuError::KvRange);
        }
        let job = attention::Job {
            p,
            q: qs,
            positions,
            kv: attention::KvRead {
                view,
                ty,
                kernels: &self.kernels,
            },
        };
        attention::run(self.par, &job, os, ss)
    }

    fn gated_act(&mut self, gate: Buf, up: Buf, act: Activation) -> Result<(), CpuError> {
        if gate.len != up.len {
            return Err(CpuError::BadRegion);
        }
        let k = self.kernels;
        let [g, u] = self.two(gate, up)?;
        matmul::apply_act(&k, act, g, u);
        Ok(())
    }

    fn sigmoid_mul(&mut self, x: Buf, gate: Buf) -> Result<(), CpuError> {
        if x.len != gate.len {
            return Err(CpuError::BadRegion);
        }
        let k = self.kernels;
        let [xs, gs] = self.two(x, gate)?;
        ops::sigmoid_mul(&k, xs, gs);
        Ok(())
    }

    fn softcap(&mut self, x: Buf, cap: f32, scale: f32) -> Result<(), CpuError> {
        for v in self.one(x)? {
            *v = cap * libm::tanhf(*v * scale / cap);
        }
        Ok(())
    }

    fn add(&mut self, x: Buf, y: Buf) -> Result<(), CpuError> {
        if x.len != y.len {
            return Err(CpuError::BadRegion);
        }
        let [xs, ys] = self.two(x, y)?;
        for (a, &b) in xs.iter_mut().zip(ys.iter()) {
            *a += b;
        }
        Ok(())
    }

    fn scale(&mut self, x: Buf, s: f32) -> Result<(), CpuError> {
        for v in self.one(x)? {
            *v *= s;
        }
        Ok(())
    }

    fn read(&mut self, src: Buf, dst: &mut [f32]) -> Result<(), CpuError> {
        let s = self.one(src)?;
        if dst.len() != s.len() {
            return Err(CpuError::BadRegion);
        }
        dst.copy_from_slice(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests;

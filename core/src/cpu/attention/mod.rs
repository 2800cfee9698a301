//! Attention of a chunk of query rows over one layer of the paged KV cache.
//!
//! # Numerics
//! With f16 storage this mirrors llama.cpp's non-flash CPU path: Q is rounded to f16 before
//! `q·k`, and the normalized softmax weights are rounded to f16 before they weight the
//! values. With Q8_0 storage Q is quantized to Q8_0 per head and `q·k` is an integer block
//! dot product (as llama.cpp does for a Q8_0 cache); values are dequantized and accumulated
//! in f32 with unrounded weights.
//!
//! The softmax of one (row, head) over its visible keys `first..=pos` takes the maximum `m`
//! of the scaled scores, `e = exp(s - m)`, sums `e` per block of [`BLOCK`] positions aligned
//! to multiples of [`BLOCK`] (f32, in the kernel's order) and adds the block sums in order
//! in f64; the weights are `e · (1 / sum)`. Every output value is then `sum_j w_j · v_j`
//! accumulated position by position in order.
//!
//! # Work split
//! Each result depends only on its (row, head), never on how the work was cut: the score
//! and value kernels give the same bits whatever tile a key or output lands in
//! (`quant::simd::attn`), and the block sums are fixed by positions. So the two schedules
//! below give the same bits as each other and for any number of threads:
//! - [`rows`] (prefill, and short decodes): a task takes blocks of query rows × the query
//!   heads of one KV head; each key and value row is read once for all of them.
//! - [`split`] (decode over a long context): three dispatches over fixed blocks of
//!   positions (scores and block maxima; block sums) and column ranges of the values, with
//!   the per-block maxima and sums merged in order on the calling thread in between.

mod rows;
mod softmax;
mod split;
#[cfg(test)]
mod tests;

use half::f16;

use crate::exec::{AttnParams, Parallel};
use crate::kv::{LayerView, PAGE_POSITIONS};
use crate::plan::KvType;
use crate::quant::{F16Rows, GgmlType, Kernels};

use super::CpuError;

/// Positions per softmax block: the block sums are fixed by these boundaries.
pub const BLOCK: usize = PAGE_POSITIONS;

/// Query rows the row schedule processes together at most.
pub const ROW_BLOCK: usize = 4;

/// `u16` units of one Q8_0 block (an f16 scale and 32 `i8`).
const Q8_UNITS: usize = 17;

/// How a layer's rows are stored and which kernels read them.
#[derive(Clone, Copy)]
pub struct KvRead<'a> {
    /// The layer.
    pub view: LayerView<'a>,
    /// Storage type.
    pub ty: KvType,
    /// Kernels.
    pub kernels: &'a Kernels,
}

/// One attention call: the queries of a chunk and where they look.
#[derive(Clone, Copy)]
pub struct Job<'a> {
    /// Shape, scale and window.
    pub p: &'a AttnParams,
    /// Queries `(rows, n_head, head_dim)`.
    pub q: &'a [f32],
    /// Position of each row.
    pub positions: &'a [u32],
    /// The layer's cache.
    pub kv: KvRead<'a>,
}

impl Job<'_> {
    /// Query heads per KV head.
    fn group(&self) -> usize {
        self.p.n_head / self.p.n_head_kv
    }

    /// The first position row `r` sees.
    fn first(&self, r: usize) -> usize {
        first_visible(self.p, self.positions[r] as usize)
    }

    /// `f32`s of scratch one prepared query takes (f16-rounded, or Q8_0 bytes).
    fn q_units(&self) -> usize {
        q_units(self.p.head_dim, self.kv.ty)
    }

    /// Prepares query head `h` of row `r` for the score kernels into `dst` (`q_units`).
    fn prep_query(&self, r: usize, h: usize, dst: &mut [f32]) -> Result<(), CpuError> {
        let d = self.p.head_dim;
        let qw = self.p.n_head * d;
        let src = &self.q[r * qw + h * d..r * qw + (h + 1) * d];
        match self.kv.ty {
            KvType::F16 => {
                let dst = dst.get_mut(..d).ok_or(CpuError::BadRegion)?;
                dst.copy_from_slice(src);
                // `x · 1` is `x`: this is the rounding alone.
                self.kv.kernels.scale_round_f16(dst, 1.0);
            }
            KvType::Q8_0 => {
                let bytes: &mut [u8] = bytemuck::cast_slice_mut(dst);
                let qb = d / 32 * 34;
                let dst = bytes.get_mut(..qb).ok_or(CpuError::BadRegion)?;
                self.kv.kernels.quantize_row(GgmlType::Q8_0, src, dst)?;
            }
        }
        Ok(())
    }

    /// Scaled scores of the keys of KV head `kvh` in `keys` (`n` positions, as
    /// [`LayerView::run`] gives them) against `nq` prepared queries in `q`:
    /// `out[i * o_stride + j]`.
    #[allow(clippy::too_many_arguments)]
    fn scores(
        &self,
        kvh: usize,
        keys: &[u16],
        n: usize,
        q: &[f32],
        nq: usize,
        out: &mut [f32],
        o_stride: usize,
    ) -> Result<(), CpuError> {
        let d = self.p.head_dim;
        let ku = self.kv.view.k_units;
        let k = self.kv.kernels;
        match self.kv.ty {
            KvType::F16 => {
                let rows = F16Rows {
                    data: keys.get(kvh * d..).ok_or(CpuError::KvRange)?,
                    stride: ku,
                    rows: n,
                    width: d,
                };
                k.dot_f16_tile(rows, &q[..nq * d], out, o_stride)?;
            }
            KvType::Q8_0 => {
                let per = d / 32 * Q8_UNITS;
                let qu = self.q_units();
                let qb = d / 32 * 34;
                for i in 0..nq {
                    let qi: &[u8] = bytemuck::cast_slice(&q[i * qu..(i + 1) * qu]);
                    for j in 0..n {
                        let kr = &keys[j * ku + kvh * per..j * ku + (kvh + 1) * per];
                        let kb: &[u8] = bytemuck::cast_slice(kr);
                        out[i * o_stride + j] = k.vec_dot(GgmlType::Q8_0, d, kb, &qi[..qb])?;
                    }
                }
            }
        }
        for i in 0..nq {
            for s in &mut out[i * o_stride..i * o_stride + n] {
                *s *= self.p.scale;
            }
        }
        Ok(())
    }

    /// Adds the values of KV head `kvh` in `values` (`n` positions), columns `cols` of the
    /// head, weighted by `w[i * w_stride + j]`, into `nout` outputs `out[i * o_stride ..]`
    /// (`cols.len()` values each). Column cuts are multiples of 8 (f16) or 32 (Q8_0).
    #[allow(clippy::too_many_arguments)]
    fn values(
        &self,
        kvh: usize,
        values: &[u16],
        n: usize,
        cols: core::ops::Range<usize>,
        w: &[f32],
        w_stride: usize,
        out: &mut [f32],
        o_stride: usize,
        nout: usize,
    ) -> Result<(), CpuError> {
        let dv = self.p.head_dim_v;
        let vu = self.kv.view.v_units;
        match self.kv.ty {
            KvType::F16 => {
                let rows = F16Rows {
                    data: values
                        .get(kvh * dv + cols.start..)
                        .ok_or(CpuError::KvRange)?,
                    stride: vu,
                    rows: n,
                    width: cols.len(),
                };
                self.kv
                    .kernels
                    .axpy_f16_tile(rows, w, w_stride, out, o_stride, nout)?;
            }
            KvType::Q8_0 => {
                let per = dv / 32 * Q8_UNITS;
                let (b0, b1) = (cols.start / 32, cols.end.div_ceil(32));
                for i in 0..nout {
                    let o = out
                        .get_mut(i * o_stride..i * o_stride + cols.len())
                        .ok_or(CpuError::BadRegion)?;
                    for j in 0..n {
                        let wj = w[i * w_stride + j];
                        if wj == 0.0 {
                            continue;
                        }
                        let row = &values[j * vu + kvh * per..j * vu + (kvh + 1) * per];
                        let blocks = row[b0 * Q8_UNITS..b1 * Q8_UNITS].chunks_exact(Q8_UNITS);
                        for (ob, blk) in o.chunks_mut(32).zip(blocks) {
                            let dq = wj * f16::from_bits(blk[0]).to_f32();
                            let qs: &[u8] = bytemuck::cast_slice(&blk[1..]);
                            for (o, &b) in ob.iter_mut().zip(qs) {
                                *o += dq * f32::from(b as i8);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Calls `f(t, keys, values, n)` for the runs of positions `lo..hi` in storage order.
    fn for_runs(
        &self,
        lo: usize,
        hi: usize,
        mut f: impl FnMut(usize, &[u16], &[u16], usize) -> Result<(), CpuError>,
    ) -> Result<(), CpuError> {
        let mut t = lo;
        while t < hi {
            let (k, v, n) = self.kv.view.run(t, hi - t).ok_or(CpuError::KvRange)?;
            f(t, k, v, n)?;
            t += n;
        }
        Ok(())
    }
}

/// The first position a query at `pos` sees.
fn first_visible(p: &AttnParams, pos: usize) -> usize {
    match p.window {
        Some(w) => (pos + 1).saturating_sub(w as usize),
        None => 0,
    }
}

/// `f32`s of scratch one prepared query head takes.
fn q_units(head_dim: usize, ty: KvType) -> usize {
    match ty {
        KvType::F16 => head_dim,
        KvType::Q8_0 => (head_dim / 32 * 34).div_ceil(4),
    }
}

/// `f32`s of attention scratch (`Layout::scores`) with which every schedule runs at full
/// width: the row schedule with up to 4 rows (`ROW_BLOCK`) of a whole KV group per task at short
/// context and one row at the full context, and the decode split over every head.
pub fn scratch_len(
    n_head: usize,
    n_head_kv: usize,
    head_dim: usize,
    ctx: usize,
    threads: usize,
) -> Option<usize> {
    let group = n_head.checked_div(n_head_kv)?.max(1);
    let blocks = ctx.div_ceil(BLOCK).checked_add(1)?;
    // One (row, head): its query, its scores over the context, and a sum per block.
    let unit = head_dim
        .checked_add(blocks.checked_mul(BLOCK + 1)?)?
        .checked_add(ROW_BLOCK)?;
    let rows = threads.checked_mul(group.checked_mul(2)?)?.max(n_head);
    rows.checked_mul(unit)
}

/// Runs one attention call: `out` is `(rows, n_head, head_dim_v)`, `scratch` the arena's
/// attention scratch.
pub fn run(
    par: &dyn Parallel,
    job: &Job<'_>,
    out: &mut [f32],
    scratch: &mut [f32],
) -> Result<(), CpuError> {
    if split::applies(par, job, scratch.len()) {
        split::run(par, job, out, scratch)
    } else {
        rows::run(par, job, out, scratch)
    }
}

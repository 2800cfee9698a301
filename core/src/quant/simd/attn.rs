//! The attention kernels of [`Kernels`]: tiles of f16 dot products and value sums over the KV
//! cache, and the vectorized `exp` of the softmax.
//!
//! Determinism contract (what lets the CPU attention give the same bits however it splits
//! the work): within one kernel table,
//! - each result of [`Kernels::dot_f16_tile`] depends only on its key row and query vector,
//!   not on how many rows or queries share the call;
//! - each output value of [`Kernels::axpy_f16_tile`] is updated row by row in order, by the
//!   same operation whatever the tile shape, as long as calls cut columns at multiples of 8;
//! - [`Kernels::exp_sum_f32`] sums in an order fixed by the slice alone;
//! - [`Kernels::exp_f32`] and [`Kernels::scale_round_f16`] are element-wise.

use super::super::QuantError;
use super::exp::exp_f32 as exp_scalar;
use super::{Isa, Kernels};

/// `rows` rows of `width` f16 bit patterns, row `j` at `data[j * stride..][..width]` (the
/// keys or values of one head in a run of KV positions).
#[derive(Clone, Copy, Debug)]
pub struct F16Rows<'a> {
    /// The storage the rows lie in.
    pub data: &'a [u16],
    /// Units from one row to the next.
    pub stride: usize,
    /// Rows.
    pub rows: usize,
    /// Values per row.
    pub width: usize,
}

impl F16Rows<'_> {
    /// Whether every row lies inside `data`.
    fn fits(&self) -> bool {
        match self.rows.checked_sub(1) {
            None => true,
            Some(last) => last
                .checked_mul(self.stride)
                .and_then(|o| o.checked_add(self.width))
                .is_some_and(|end| end <= self.data.len()),
        }
    }
}

/// Whether `n` rows of `width` values at `stride` lie inside `len` values.
fn strided_fits(len: usize, n: usize, stride: usize, width: usize) -> bool {
    match n.checked_sub(1) {
        None => true,
        Some(last) => last
            .checked_mul(stride)
            .and_then(|o| o.checked_add(width))
            .is_some_and(|end| end <= len),
    }
}

/// `out[i * o_stride + j] = k_j · q_i` for every key row `j` and query `i` (`q` holds
/// `q.len() / k.width` queries back to back). Same safety story as `RowsFn`: the shapes are
/// checked by [`Kernels::dot_f16_tile`]; the kernels index checked slices.
pub(super) type DotTileFn = unsafe fn(k: F16Rows<'_>, q: &[f32], out: &mut [f32], o_stride: usize);

/// `out[i * o_stride + c] += sum_j w[i * w_stride + j] · v_j[c]` for `i < n`, rows in order.
/// Same safety story as [`DotTileFn`].
pub(super) type AxpyTileFn = unsafe fn(
    v: F16Rows<'_>,
    w: &[f32],
    w_stride: usize,
    out: &mut [f32],
    o_stride: usize,
    n: usize,
);

/// `x[i] = e^x[i]`. Same safety story as [`DotTileFn`].
pub(super) type ExpFn = unsafe fn(x: &mut [f32]);

/// `x[i] = e^(x[i] - m)`, returning the sum of the results. Same safety story.
pub(super) type ExpSumFn = unsafe fn(x: &mut [f32], m: f32) -> f32;

/// `x[i] = f16(x[i] · s)` (rounded to nearest even, back in f32). Same safety story.
pub(super) type ScaleRoundFn = unsafe fn(x: &mut [f32], s: f32);

/// One tier's attention kernels.
#[derive(Clone, Copy)]
pub(super) struct AttnKernels {
    pub(super) dot_tile: DotTileFn,
    pub(super) axpy_tile: AxpyTileFn,
    pub(super) exp: ExpFn,
    pub(super) exp_sum: ExpSumFn,
    pub(super) scale_round: ScaleRoundFn,
    pub(super) isa: Isa,
}

impl AttnKernels {
    /// The portable kernels.
    pub(super) const SCALAR: Self = Self {
        dot_tile: scalar_dot_tile,
        axpy_tile: scalar_axpy_tile,
        exp: scalar_exp,
        exp_sum: scalar_exp_sum,
        scale_round: scalar_scale_round,
        isa: Isa::Scalar,
    };
}

impl Kernels {
    /// Stores `a` as the attention kernels if the features hold everything in `needs`, which
    /// must list every feature they were compiled for.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub(super) fn offer_attn(&mut self, needs: &[super::Feature], a: AttnKernels) {
        if self.features().has_all(needs) {
            self.attn = a;
        }
    }

    /// The tier of the attention kernels ([`Kernels::dot_f16_tile`] and the others of this
    /// group).
    pub fn attn_isa(&self) -> Isa {
        self.attn.isa
    }

    /// Attention scores of a tile: `out[i * o_stride + j] = k_j · q_i` for every row `j` of
    /// `k` and every query `i`, where `q` holds `q.len() / k.width` queries back to back.
    ///
    /// Each value depends only on its key row and query (not on the other rows or queries of
    /// the call); products are exact in f32 and the tiers differ only in the order of the
    /// additions. Fails if `q` is not a whole number of queries, a row lies outside
    /// `k.data`, `o_stride < k.rows`, or `out` is too short.
    pub fn dot_f16_tile(
        &self,
        k: F16Rows<'_>,
        q: &[f32],
        out: &mut [f32],
        o_stride: usize,
    ) -> Result<(), QuantError> {
        let nq = match q.len().checked_div(k.width) {
            Some(n) if n * k.width == q.len() => n,
            Some(_) => {
                return Err(QuantError::NotBlockMultiple {
                    n: q.len(),
                    block: k.width,
                })
            }
            None => 0,
        };
        check_tile(&k, nq, out.len(), o_stride, k.rows)?;
        if k.width == 0 {
            return Ok(());
        }
        // SAFETY: the shapes are checked above as `DotTileFn` requires, and by the invariant
        // of `Kernels` the CPU has every feature the stored kernel needs.
        unsafe { (self.attn.dot_tile)(k, q, out, o_stride) };
        Ok(())
    }

    /// Weighted sums of value rows into `n` outputs: `out[i * o_stride + c] += w[i *
    /// w_stride + j] · v_j[c]` for every row `j` of `v` (in order), column `c < v.width` and
    /// output `i < n`.
    ///
    /// Each output value is updated row by row with the same operation (a fused
    /// multiply-add where the tier has one) whatever the tile: calls that cut the columns of
    /// a row at multiples of 8 give the same bits as one call over them all. Fails if a row
    /// lies outside `v.data`, `w` or `out` is too short for `n` strided rows, or a stride is
    /// narrower than its row.
    pub fn axpy_f16_tile(
        &self,
        v: F16Rows<'_>,
        w: &[f32],
        w_stride: usize,
        out: &mut [f32],
        o_stride: usize,
        n: usize,
    ) -> Result<(), QuantError> {
        check_tile(&v, n, out.len(), o_stride, v.width)?;
        if w_stride < v.rows || !strided_fits(w.len(), n, w_stride, v.rows) {
            return Err(QuantError::BadLength {
                expected: n.saturating_mul(w_stride),
                got: w.len(),
            });
        }
        // SAFETY: as in `dot_f16_tile`.
        unsafe { (self.attn.axpy_tile)(v, w, w_stride, out, o_stride, n) };
        Ok(())
    }

    /// `x[i] = e^x[i]` in place, within 1.2e-7 relative of the exact value on normal
    /// results (see [`exp_f32`](super::exp_f32) for the range).
    pub fn exp_f32(&self, x: &mut [f32]) {
        // SAFETY: element-wise over a checked slice; by the invariant of `Kernels` the CPU
        // has every feature the stored kernel needs.
        unsafe { (self.attn.exp)(x) }
    }

    /// The softmax numerator: `x[i] = e^(x[i] - m)` in place, returning the sum of the new
    /// values, added in an order that depends only on `x.len()`.
    pub fn exp_sum_f32(&self, x: &mut [f32], m: f32) -> f32 {
        // SAFETY: as in `exp_f32`.
        unsafe { (self.attn.exp_sum)(x, m) }
    }

    /// `x[i] = f16(x[i] · s)` in place: scaled, then rounded to the nearest f16 (ties to
    /// even) and widened back, as attention rounds its weights for an f16 cache.
    pub fn scale_round_f16(&self, x: &mut [f32], s: f32) {
        // SAFETY: as in `exp_f32`.
        unsafe { (self.attn.scale_round)(x, s) }
    }
}

/// Checks `n` strided output rows of `cols` values and the row storage of `rows`.
fn check_tile(
    rows: &F16Rows<'_>,
    n: usize,
    out_len: usize,
    o_stride: usize,
    cols: usize,
) -> Result<(), QuantError> {
    if !rows.fits() {
        return Err(QuantError::BadLength {
            expected: rows.rows.saturating_mul(rows.stride),
            got: rows.data.len(),
        });
    }
    if (n > 1 && o_stride < cols) || !strided_fits(out_len, n, o_stride, cols) {
        return Err(QuantError::BadLength {
            expected: n.saturating_mul(o_stride),
            got: out_len,
        });
    }
    Ok(())
}

fn scalar_dot_tile(k: F16Rows<'_>, q: &[f32], out: &mut [f32], o_stride: usize) {
    let d = k.width;
    for (i, qi) in q.chunks_exact(d).enumerate() {
        for j in 0..k.rows {
            let kj = &k.data[j * k.stride..][..d];
            let mut acc = 0.0f32;
            for (&kb, &qv) in kj.iter().zip(qi) {
                acc += half::f16::from_bits(kb).to_f32() * qv;
            }
            out[i * o_stride + j] = acc;
        }
    }
}

fn scalar_axpy_tile(
    v: F16Rows<'_>,
    w: &[f32],
    w_stride: usize,
    out: &mut [f32],
    o_stride: usize,
    n: usize,
) {
    for i in 0..n {
        let o = &mut out[i * o_stride..][..v.width];
        for j in 0..v.rows {
            let wj = w[i * w_stride + j];
            for (o, &vb) in o.iter_mut().zip(&v.data[j * v.stride..][..v.width]) {
                *o += wj * half::f16::from_bits(vb).to_f32();
            }
        }
    }
}

fn scalar_exp(x: &mut [f32]) {
    for v in x {
        *v = exp_scalar(*v);
    }
}

fn scalar_exp_sum(x: &mut [f32], m: f32) -> f32 {
    let mut sum = 0.0f32;
    for v in x {
        *v = exp_scalar(*v - m);
        sum += *v;
    }
    sum
}

fn scalar_scale_round(x: &mut [f32], s: f32) {
    for v in x {
        *v = half::f16::from_f32(*v * s).to_f32();
    }
}

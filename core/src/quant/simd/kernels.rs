//! [`Kernels`]: the dot-product and activation-quantization kernels picked once for a CPU.

use core::fmt;
use core::mem::size_of;

use bytemuck::Pod;

use super::super::api::{check_bytes, has_dot, row_len};
use super::super::blocks::{
    BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5K, BlockQ5_0, BlockQ6K, BlockQ8K, BlockQ8_0, BlockQ8_1,
};
use super::super::{dot, quantize as q, vec_dot, vec_dot_type, GgmlType, QuantError};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use super::Feature;
use super::{CpuFeatures, Isa};

/// Dot products of several weight rows with one activation row: `out[i] = row_i · act`.
///
/// Contract, checked by [`Kernels::dot_rows`] before any call: `act` is a whole number of
/// activation blocks and `w` is exactly `out.len()` rows of as many weight blocks. The
/// kernels stay memory-safe whatever they get (they index checked slices); the only
/// `unsafe` part of calling one is the instruction set it was compiled for.
pub(super) type RowsFn = unsafe fn(w: &[u8], act: &[u8], out: &mut [f32]);

/// Dot products of a tile of weight rows with several activation rows, register-blocked:
/// with `m` the rows of `w` and `k` those of `acts` (both rows of the same number of
/// blocks), `out[r * ldo + i]` is weight row `i` dotted with activation row `r`, computed
/// bit for bit as the [`RowsFn`] of the same tier computes it.
///
/// Contract, checked by [`Kernels::dot_tile`] before any call: `acts` is `k` whole
/// activation rows, `w` whole weight rows of as many blocks, `ldo >= m` and `out` holds
/// index `(k - 1) * ldo + m - 1`. Same safety story as [`RowsFn`].
pub(super) type TileFn = unsafe fn(w: &[u8], acts: &[u8], k: usize, out: &mut [f32], ldo: usize);

/// Quantizes `x` (a whole number of blocks) into `out` (exactly that many blocks).
/// Same safety story as [`RowsFn`].
pub(super) type QuantFn = unsafe fn(x: &[f32], out: &mut [u8]);

/// `sum(k[i] · q[i])` over the common length, `k` as f16 bits. Same safety story as [`RowsFn`].
pub(super) type F16DotFn = unsafe fn(k: &[u16], q: &[f32]) -> f32;

/// `out[i] += w · v[i]` over the common length, `v` as f16 bits. Same safety story as
/// [`RowsFn`].
pub(super) type F16AxpyFn = unsafe fn(out: &mut [f32], w: f32, v: &[u16]);

/// The weight types with a per-ISA dot kernel, in slot order.
const DOT_TYPES: [GgmlType; 7] = [
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q8_0,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
];

/// The activation types with a per-ISA quantizer, in slot order.
const QUANT_TYPES: [GgmlType; 3] = [GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K];

/// The matmul kernels for one CPU: a dot-product kernel per weight type and an activation
/// quantizer per activation type, each the best the [`CpuFeatures`] allow.
///
/// Build it once ([`Kernels::select`] or [`Kernels::scalar`]) and keep it: it is a small
/// `Copy` table of function pointers, so choosing costs nothing per call. Every entry point
/// checks its lengths like the free functions [`quantize_row`](super::super::quantize_row)
/// and [`vec_dot`]. Results: quantizers write the same bytes as the scalar ones; dot products
/// sum each block's quants exactly in integers like the scalar kernels and differ only in
/// the order of the f32 additions. Where a tier has a tile kernel for a type (the x86 and
/// NEON tiers, for all seven), [`Kernels::dot_tile`] uses it; it gives the same bits as
/// [`Kernels::dot_rows`] of that tier for every (weight row, activation row) pair, which
/// the engine relies on (prefill and decode compute the same values).
///
/// Activation rows must come from the activation quantizers (theirs or the scalar ones):
/// the SIMD Q6_K kernels use the stored Q8_K block sums, as the scalar Q4_K / Q5_K ones do.
///
/// Invariant (what makes calling the stored pointers sound): a kernel is stored only when
/// `features` holds every [`Feature`] it was compiled for; `offer_dot_tile`, `offer_quant`,
/// `offer_f16` and `offer_attn` check that, and they are the only writers.
#[derive(Clone, Copy)]
pub struct Kernels {
    features: CpuFeatures,
    dots: [(RowsFn, Option<TileFn>, Isa); DOT_TYPES.len()],
    quants: [(QuantFn, Isa); QUANT_TYPES.len()],
    f16: (F16DotFn, F16AxpyFn, Isa),
    pub(super) attn: super::attn::AttnKernels,
}

impl Kernels {
    /// The scalar reference kernels (what [`vec_dot`] and `quantize_row` run).
    pub fn scalar() -> Self {
        Self {
            features: CpuFeatures::none(),
            dots: [
                (scalar_q4_0, None, Isa::Scalar),
                (scalar_q4_1, None, Isa::Scalar),
                (scalar_q5_0, None, Isa::Scalar),
                (scalar_q8_0, None, Isa::Scalar),
                (scalar_q4_k, None, Isa::Scalar),
                (scalar_q5_k, None, Isa::Scalar),
                (scalar_q6_k, None, Isa::Scalar),
            ],
            quants: [
                (scalar_quant_q8_0, Isa::Scalar),
                (scalar_quant_q8_1, Isa::Scalar),
                (scalar_quant_q8_k, Isa::Scalar),
            ],
            f16: (scalar_dot_f16, scalar_axpy_f16, Isa::Scalar),
            attn: super::attn::AttnKernels::SCALAR,
        }
    }

    /// The fastest kernels `features` allows, per type (scalar where no SIMD kernel applies).
    pub fn select(features: CpuFeatures) -> Self {
        let mut k = Self::scalar();
        k.features = features;
        #[cfg(target_arch = "x86_64")]
        super::x86::install(&mut k);
        #[cfg(target_arch = "aarch64")]
        super::arm::install(&mut k);
        k
    }

    /// The features these kernels were selected with.
    pub fn features(&self) -> CpuFeatures {
        self.features
    }

    /// Stores `rows` as the dot kernel of `ty` and `tile` as its tile kernel (which must
    /// agree with `rows` bit for bit, see [`TileFn`]) if the features hold everything in
    /// `needs`, which must list every feature both were compiled for.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub(super) fn offer_dot_tile(
        &mut self,
        ty: GgmlType,
        needs: &[Feature],
        isa: Isa,
        rows: RowsFn,
        tile: TileFn,
    ) {
        if let Some(i) = DOT_TYPES.iter().position(|&t| t == ty) {
            if self.features.has_all(needs) {
                self.dots[i] = (rows, Some(tile), isa);
            }
        }
    }

    /// Stores `f` as the quantizer of `ty` if the features hold everything in `needs`,
    /// which must list every feature `f` was compiled for.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub(super) fn offer_quant(&mut self, ty: GgmlType, needs: &[Feature], isa: Isa, f: QuantFn) {
        if let Some(i) = QUANT_TYPES.iter().position(|&t| t == ty) {
            if self.features.has_all(needs) {
                self.quants[i] = (f, isa);
            }
        }
    }

    /// Stores the f16 vector kernels if the features hold everything in `needs`, which must
    /// list every feature they were compiled for.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[allow(dead_code)]
    pub(super) fn offer_f16(
        &mut self,
        needs: &[Feature],
        isa: Isa,
        dot: F16DotFn,
        axpy: F16AxpyFn,
    ) {
        if self.features.has_all(needs) {
            self.f16 = (dot, axpy, isa);
        }
    }

    /// The tier of the f16 vector kernels ([`Kernels::dot_f16`], [`Kernels::axpy_f16`]).
    pub fn f16_isa(&self) -> Isa {
        self.f16.2
    }

    /// `sum(k[i] · q[i])` over the common length of `k` (f16 bit patterns, as the KV cache
    /// stores them) and `q`: attention's `q·k`. Products are exact in f32; only the order of
    /// the additions (and fused multiply-adds) differs between tiers.
    pub fn dot_f16(&self, k: &[u16], q: &[f32]) -> f32 {
        // SAFETY: the kernels index checked slices; by the invariant of `Kernels` the CPU has
        // every feature the stored kernel needs.
        unsafe { (self.f16.0)(k, q) }
    }

    /// `out[i] += w · v[i]` over the common length of `out` and `v` (f16 bit patterns):
    /// attention's weighted sum of values.
    pub fn axpy_f16(&self, out: &mut [f32], w: f32, v: &[u16]) {
        // SAFETY: as in `dot_f16`.
        unsafe { (self.f16.1)(out, w, v) }
    }

    /// The tier of the dot kernel used for weight type `wty` ([`Isa::Scalar`] for types
    /// without a SIMD kernel).
    pub fn dot_isa(&self, wty: GgmlType) -> Isa {
        dot_slot(wty).map_or(Isa::Scalar, |i| self.dots[i].2)
    }

    /// The tier of the quantizer used for activation type `ty`.
    pub fn quantize_isa(&self, ty: GgmlType) -> Isa {
        quant_slot(ty).map_or(Isa::Scalar, |i| self.quants[i].1)
    }

    /// Dot products of `out.len()` weight rows with one activation row: `out[i]` is row `i`
    /// of `w` (type `wty`, `n` elements per row, rows back to back) dotted with `act` (`n`
    /// elements quantized to [`vec_dot_type`]`(wty)`).
    ///
    /// This is the matmul inner loop: the kernel is dispatched once per call and works on
    /// several rows at a time, sharing the activation loads. Supports the same types as
    /// [`vec_dot`].
    pub fn dot_rows(
        &self,
        wty: GgmlType,
        n: usize,
        w: &[u8],
        act: &[u8],
        out: &mut [f32],
    ) -> Result<(), QuantError> {
        if !has_dot(wty) {
            return Err(QuantError::UnsupportedType(wty));
        }
        let rb = row_len(wty, n)?;
        check_bytes(vec_dot_type(wty), n, act.len())?;
        let expected = rb.saturating_mul(out.len());
        if w.len() != expected {
            return Err(QuantError::BadLength {
                expected,
                got: w.len(),
            });
        }
        match dot_slot(wty) {
            // SAFETY: the lengths are checked above as `RowsFn` requires, and by the
            // invariant of `Kernels` the CPU has every feature the stored kernel needs.
            Some(i) => unsafe { (self.dots[i].0)(w, act, out) },
            None if rb == 0 => out.fill(0.0),
            None => {
                for (row, o) in w.chunks_exact(rb).zip(out.iter_mut()) {
                    *o = vec_dot(wty, n, row, act)?;
                }
            }
        }
        Ok(())
    }

    /// Dot products of a tile of weight rows with several activation rows: with `m` the
    /// number of weight rows in `w` and `k` the number of activation rows in `acts` (each
    /// `n` elements quantized to [`vec_dot_type`]`(wty)`), `out[r * m + i]` is weight row
    /// `i` dotted with activation row `r`; `out` must hold exactly `k * m` values.
    ///
    /// This is the prefill (matrix-matrix) path: the weight rows are read from memory once
    /// for all activation rows, in blocks of [`Kernels::TILE_ROWS`] rows that stay in the L1
    /// cache while every activation row passes over them. Where the tier has a tile kernel
    /// (x86, NEON), it unpacks each weight block once for several activation rows. Each value is
    /// computed exactly as [`Kernels::dot_rows`] computes it, so the two agree bit for bit.
    pub fn dot_tile(
        &self,
        wty: GgmlType,
        n: usize,
        w: &[u8],
        acts: &[u8],
        out: &mut [f32],
    ) -> Result<(), QuantError> {
        if !has_dot(wty) {
            return Err(QuantError::UnsupportedType(wty));
        }
        let rb = row_len(wty, n)?;
        let ab = row_len(vec_dot_type(wty), n)?;
        let (m, k) = match (w.len().checked_div(rb), acts.len().checked_div(ab)) {
            (Some(m), Some(k)) => (m, k),
            // Zero-width rows: every dot product is 0.
            _ => {
                out.fill(0.0);
                return Ok(());
            }
        };
        let expected = m.saturating_mul(k);
        if w.len() != m * rb || acts.len() != k * ab || out.len() != expected {
            return Err(QuantError::BadLength {
                expected,
                got: out.len(),
            });
        }
        let tile_fn = dot_slot(wty).and_then(|i| self.dots[i].1);
        let mut i0 = 0;
        for tile in w.chunks(Self::TILE_ROWS * rb) {
            let i1 = i0 + tile.len() / rb;
            if let Some(f) = tile_fn {
                // SAFETY: `tile` is whole rows of `rb` bytes and `acts` `k` rows of `ab`
                // (checked above, with `m * rb` and `k * ab` the lengths); `out[i0..]` holds
                // index `(k - 1) * m + (i1 - i0) - 1` as `out.len() == k * m` and `i1 <= m`;
                // by the invariant of `Kernels` the CPU has every feature the kernel needs.
                unsafe { f(tile, acts, k, &mut out[i0..], m) };
                i0 = i1;
                continue;
            }
            for (r, act) in acts.chunks_exact(ab).enumerate() {
                let o = &mut out[r * m + i0..r * m + i1];
                self.dot_rows(wty, n, tile, act, o)?;
            }
            i0 = i1;
        }
        Ok(())
    }

    /// Weight rows per tile of [`Kernels::dot_tile`]: 16 rows of 4096 Q4 values are 36 KiB,
    /// about an L1 data cache.
    pub const TILE_ROWS: usize = 16;

    /// One dot product, as [`vec_dot`] computes it but with these kernels.
    pub fn vec_dot(
        &self,
        wty: GgmlType,
        n: usize,
        w: &[u8],
        act: &[u8],
    ) -> Result<f32, QuantError> {
        let mut out = [0.0f32];
        self.dot_rows(wty, n, w, act, &mut out)?;
        Ok(out[0])
    }

    /// Quantize f32 activations, as [`quantize_row`](super::super::quantize_row) does (same
    /// types, same bytes), with these kernels.
    pub fn quantize_row(
        &self,
        ty: GgmlType,
        src: &[f32],
        dst: &mut [u8],
    ) -> Result<(), QuantError> {
        match quant_slot(ty) {
            Some(i) => {
                check_bytes(ty, src.len(), dst.len())?;
                // SAFETY: `src` is whole blocks and `dst` exactly their bytes (checked just
                // above), and by the invariant of `Kernels` the CPU has every feature the
                // stored kernel needs.
                unsafe { (self.quants[i].0)(src, dst) };
                Ok(())
            }
            None => super::super::quantize_row(ty, src, dst),
        }
    }
}

impl fmt::Debug for Kernels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut m = f.debug_map();
        m.entry(&"features", &self.features);
        for (t, (_, _, isa)) in DOT_TYPES.iter().zip(&self.dots) {
            m.entry(&t.name(), &isa.name());
        }
        for (t, (_, isa)) in QUANT_TYPES.iter().zip(&self.quants) {
            m.entry(&t.name(), &isa.name());
        }
        m.entry(&"f16", &self.f16.2.name());
        m.entry(&"attn", &self.attn.isa.name());
        m.finish()
    }
}

fn dot_slot(ty: GgmlType) -> Option<usize> {
    DOT_TYPES.iter().position(|&t| t == ty)
}

fn quant_slot(ty: GgmlType) -> Option<usize> {
    QUANT_TYPES.iter().position(|&t| t == ty)
}

/// The scalar rows loop: one reference dot per row.
#[inline(always)]
fn scalar_rows<W: Pod, A: Pod>(w: &[u8], act: &[u8], out: &mut [f32], dot: fn(&[W], &[A]) -> f32) {
    let Ok(a) = bytemuck::try_cast_slice::<u8, A>(act) else {
        return;
    };
    let rb = a.len() * size_of::<W>();
    if rb == 0 {
        out.fill(0.0);
        return;
    }
    for (row, o) in w.chunks_exact(rb).zip(out.iter_mut()) {
        if let Ok(row) = bytemuck::try_cast_slice::<u8, W>(row) {
            *o = dot(row, a);
        }
    }
}

fn scalar_q4_0(w: &[u8], act: &[u8], out: &mut [f32]) {
    scalar_rows::<BlockQ4_0, BlockQ8_0>(w, act, out, dot::vec_dot_q4_0_q8_0);
}

fn scalar_q4_1(w: &[u8], act: &[u8], out: &mut [f32]) {
    scalar_rows::<BlockQ4_1, BlockQ8_1>(w, act, out, dot::vec_dot_q4_1_q8_1);
}

fn scalar_q5_0(w: &[u8], act: &[u8], out: &mut [f32]) {
    scalar_rows::<BlockQ5_0, BlockQ8_0>(w, act, out, dot::vec_dot_q5_0_q8_0);
}

fn scalar_q8_0(w: &[u8], act: &[u8], out: &mut [f32]) {
    scalar_rows::<BlockQ8_0, BlockQ8_0>(w, act, out, dot::vec_dot_q8_0_q8_0);
}

fn scalar_q4_k(w: &[u8], act: &[u8], out: &mut [f32]) {
    scalar_rows::<BlockQ4K, BlockQ8K>(w, act, out, dot::vec_dot_q4_k_q8_k);
}

fn scalar_q5_k(w: &[u8], act: &[u8], out: &mut [f32]) {
    scalar_rows::<BlockQ5K, BlockQ8K>(w, act, out, dot::vec_dot_q5_k_q8_k);
}

fn scalar_q6_k(w: &[u8], act: &[u8], out: &mut [f32]) {
    scalar_rows::<BlockQ6K, BlockQ8K>(w, act, out, dot::vec_dot_q6_k_q8_k);
}

fn scalar_quant_q8_0(x: &[f32], out: &mut [u8]) {
    if let Ok(out) = bytemuck::try_cast_slice_mut(out) {
        q::quantize_q8_0_act(x, out);
    }
}

fn scalar_quant_q8_1(x: &[f32], out: &mut [u8]) {
    if let Ok(out) = bytemuck::try_cast_slice_mut(out) {
        q::quantize_q8_1(x, out);
    }
}

fn scalar_quant_q8_k(x: &[f32], out: &mut [u8]) {
    if let Ok(out) = bytemuck::try_cast_slice_mut(out) {
        q::quantize_q8_k(x, out);
    }
}

fn scalar_dot_f16(k: &[u16], q: &[f32]) -> f32 {
    let mut acc = 0.0f32;
    for (&kb, &qv) in k.iter().zip(q) {
        acc += half::f16::from_bits(kb).to_f32() * qv;
    }
    acc
}

fn scalar_axpy_f16(out: &mut [f32], w: f32, v: &[u16]) {
    for (o, &vb) in out.iter_mut().zip(v) {
        *o += w * half::f16::from_bits(vb).to_f32();
    }
}

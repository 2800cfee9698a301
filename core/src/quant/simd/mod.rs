//! SIMD kernels for the matmul inner loop, chosen at run time without `std`.
//!
//! How the pieces fit:
//! - [`CpuFeatures`] says which [`Feature`]s the CPU has. The core cannot detect them
//!   (`is_x86_feature_detected!` needs std), so the host does and passes the value in;
//!   claiming a feature takes `unsafe` ([`CpuFeatures::assume`]).
//! - [`Kernels::select`] turns it into a table of function pointers, one dot-product kernel
//!   per weight type and one quantizer per activation type, the best each [`Isa`] tier
//!   allows. [`Kernels::dot_rows`] is the matmul entry: one dispatch, many rows.
//!   [`Kernels::dot_tile`] is the prefill entry: many weight rows against many activation
//!   rows. It runs register-blocked tile kernels (`tile`; `x86::tile32`, `x86::tilek`,
//!   `arm::tile`) that unpack each weight block once for several activation rows and give
//!   the same bits as `dot_rows`.
//! - The kernels live per architecture: `x86` (AVX2, AVX-VNNI, AVX-512 with VNNI) and
//!   `arm` (NEON, with SDOT where present). Each is tested against the scalar reference
//!   (`quant::vec_dot`, `quant::quantize_row`), which stays the definition of the result.
//!
//! The x86 tiers share code through macros: one kernel body is compiled several times, with
//! different `#[target_feature]`s and a different integer-dot primitive (`vpmaddubsw` +
//! `vpmaddwd` for plain AVX2, `vpdpbusd` / `vpdpwssd` for the VNNI tiers).

mod attn;
mod exp;
mod features;
mod kernels;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[macro_use]
mod tile;
#[cfg(test)]
pub(crate) mod tests;

pub use attn::F16Rows;
pub use exp::exp_f32;
pub use features::{CpuFeatures, Feature, Isa};
pub use kernels::Kernels;

/// Defines `$name`, a `RowsFn` compiled for `$feat`: it views the bytes as blocks and calls
/// `$kern::<$r>(rows, act, pf) -> [f32; $r]` on groups of `$r` rows, then `$kern::<1>` on the
/// remaining rows. Kernels get rows of exactly `act.len()` blocks, and `pf`, how far past each
/// weight block to prefetch ([`prefetch_distance`]; kernels without prefetch ignore it).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! rows_entry {
    ($feat:literal, $name:ident, $w:ty, $a:ty, $kern:ident, $r:literal) => {
        #[target_feature(enable = $feat)]
        pub(in crate::quant::simd) fn $name(w: &[u8], act: &[u8], out: &mut [f32]) {
            let Ok(a) = bytemuck::try_cast_slice::<u8, $a>(act) else {
                return;
            };
            let rb = a.len() * core::mem::size_of::<$w>();
            if rb == 0 {
                out.fill(0.0);
                return;
            }
            let pf = $crate::quant::simd::prefetch_distance(rb, $r);
            let mut groups = w.chunks_exact($r * rb);
            let mut outs = out.chunks_exact_mut($r);
            for (g, o) in (&mut groups).zip(&mut outs) {
                let rows = $crate::quant::simd::split_rows::<$w, $r>(g, rb);
                for (d, v) in o.iter_mut().zip($kern::<$r>(rows, a, pf)) {
                    *d = v;
                }
            }
            for (r, o) in groups
                .remainder()
                .chunks_exact(rb)
                .zip(outs.into_remainder())
            {
                let row = bytemuck::try_cast_slice::<u8, $w>(r).unwrap_or(&[]);
                *o = $kern::<1>([row], a, pf)[0];
            }
        }
    };
}

/// Minimum distance, in bytes, between the weight block a one-row kernel reads and the one it
/// prefetches. The hardware prefetchers alone leave a single core well short of the memory
/// bandwidth on the many-row streams of a matmul. 2048 beat 1024 and 512 in paired SmolLM2
/// decode runs on 2 threads (43.4 / 40.4 / 38.1 and 58.5 / 40.6 / 38.5 tok/s, on a machine
/// whose memory bandwidth was itself contended at the time).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) const PREFETCH_BYTES: usize = 2048;

/// How far past each weight block a kernel reading `r` rows of `rb` bytes at a time
/// prefetches. Rows of at least [`PREFETCH_BYTES`] prefetch within themselves. Shorter rows
/// prefetch a whole number of `r`-row groups ahead (rows lie back to back), so every row of
/// a later group is fetched ahead: a fixed distance would land some rows on rows being read
/// at the same time and skip others (with 960-byte rows, 2048 bytes ahead of rows 0–3 lands
/// on rows 2–5, and rows 6–7 are never fetched early).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) const fn prefetch_distance(rb: usize, r: usize) -> usize {
    if rb >= PREFETCH_BYTES || rb == 0 {
        return PREFETCH_BYTES;
    }
    let group = rb * r;
    group * PREFETCH_BYTES.div_ceil(group)
}

/// Defines `$name`, a `QuantFn` compiled for `$feat`: it calls `$kern(&[f32; $qk], &mut $b)`
/// on each block.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! quant_entry {
    ($feat:literal, $name:ident, $b:ty, $qk:literal, $kern:ident) => {
        #[target_feature(enable = $feat)]
        pub(in crate::quant::simd) fn $name(x: &[f32], out: &mut [u8]) {
            let Ok(out) = bytemuck::try_cast_slice_mut::<u8, $b>(out) else {
                return;
            };
            let (xs, _) = x.as_chunks::<$qk>();
            for (x, b) in xs.iter().zip(out.iter_mut()) {
                $kern(x, b);
            }
        }
    };
}

/// `g` (`R` rows of `rb` bytes) as `R` block slices.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
fn split_rows<W: bytemuck::Pod, const R: usize>(g: &[u8], rb: usize) -> [&[W]; R] {
    let mut out: [&[W]; R] = [&[]; R];
    for (o, r) in out.iter_mut().zip(g.chunks_exact(rb)) {
        *o = bytemuck::try_cast_slice(r).unwrap_or(&[]);
    }
    out
}

#[cfg(target_arch = "aarch64")]
mod arm;
#[cfg(target_arch = "x86_64")]
mod x86;

/// The eight 6-bit scales and eight 6-bit mins of a Q4_K / Q5_K block, one per byte
/// (little-endian u64s), as [`unpack_scales_mins`](super::unpack_scales_mins) gives them.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64", test))]
#[inline(always)]
fn scales_mins_k4(s: &[u8; 12]) -> (u64, u64) {
    let [w0, w1, w2] = bytemuck::cast::<[u8; 12], [[u8; 4]; 3]>(*s).map(u32::from_le_bytes);
    // Sub-blocks 0-3: low 6 bits of bytes 0-3 (scales) and 4-7 (mins). Sub-blocks 4-7: the
    // nibbles of bytes 8-11, plus the top 2 bits of bytes 0-3 / 4-7 moved to bits 4-5.
    let sc_lo = w0 & 0x3f3f_3f3f;
    let m_lo = w1 & 0x3f3f_3f3f;
    let sc_hi = (w2 & 0x0f0f_0f0f) | ((w0 >> 2) & 0x3030_3030);
    let m_hi = ((w2 >> 4) & 0x0f0f_0f0f) | ((w1 >> 2) & 0x3030_3030);
    (
        u64::from(sc_lo) | (u64::from(sc_hi) << 32),
        u64::from(m_lo) | (u64::from(m_hi) << 32),
    )
}

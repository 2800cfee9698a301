//! Weights on the GPU: tensors copied once, byte for byte as GGUF stores them, into pools of
//! storage buffers that each fit the adapter's largest binding.
//!
//! A tensor larger than one binding (Gemma 3's 178 MB embedding table on a 128 MiB limit) is
//! cut by rows into pieces; kernels run once per piece. Pieces start at 256-byte offsets, so
//! f32 vectors are word aligned; rows inside a piece keep GGUF's packing (blocks only 2-byte
//! aligned), which the shaders read with byte-addressed loads.
//!
//! One format is repacked: a Q6_K block (210 bytes) is followed by 14 bytes of zeros on the
//! GPU ([`Q6K_GPU_BLOCK`] = 224), so that every block, and every row, starts 16-byte aligned
//! and the decode matvec reads it in whole 16-byte words. That is 6.7 % more bytes for Q6_K
//! tensors; in exchange, the Q6_K matvec reads at the same rate as Q4_K's (BENCHMARKS.md).

use std::collections::HashMap;

use glimmer_core::model::{Tensor, Weights};
use glimmer_core::quant::GgmlType;

use crate::{GpuContext, GpuError};

/// Bytes of a Q6_K block on the GPU: GGUF's 210, then zeros up to a multiple of 16.
pub(crate) const Q6K_GPU_BLOCK: usize = 224;
/// Bytes of a Q6_K block in GGUF.
const Q6K_BLOCK: usize = 210;

/// Bytes of a row of `cols` values of `ty` as the GPU holds it.
fn gpu_row_bytes(ty: GgmlType, cols: usize) -> Option<usize> {
    match ty {
        GgmlType::Q6_K if cols.is_multiple_of(256) => Some(cols / 256 * Q6K_GPU_BLOCK),
        GgmlType::Q6_K => None,
        _ => ty.row_bytes(cols),
    }
}

/// Alignment of a piece inside its pool.
const PIECE_ALIGN: u64 = 256;

/// A run of a tensor's rows in one pool.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Piece {
    /// Pool index.
    pub pool: usize,
    /// Byte offset of the first row in the pool.
    pub base: u32,
    /// First row.
    pub row0: usize,
    /// Rows.
    pub rows: usize,
}

/// An uploaded tensor.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    /// Block format.
    pub ty: GgmlType,
    /// Rows.
    pub rows: usize,
    /// Elements per row.
    pub cols: usize,
    /// Bytes per row.
    pub row_bytes: usize,
    /// Where the rows live.
    pub pieces: Vec<Piece>,
}

/// Every uploaded tensor, found by the address and length of its host bytes.
#[derive(Default)]
pub(crate) struct WeightStore {
    pub pools: Vec<wgpu::Buffer>,
    map: HashMap<(usize, usize), Entry>,
}

fn key(t: &Tensor<'_>) -> (usize, usize) {
    (t.data.as_ptr() as usize, t.data.len())
}

/// Every tensor of a model (shared ones once).
pub(crate) fn model_tensors<'a, 'w>(w: &'a Weights<'w>) -> Vec<&'a Tensor<'w>> {
    let mut v = vec![&w.tok_embd, &w.output_norm, &w.output];
    for l in w.layers.iter() {
        v.extend(l.tensors());
    }
    v
}

impl WeightStore {
    /// The uploaded copy of `t`.
    pub fn get(&self, t: &Tensor<'_>) -> Result<&Entry, GpuError> {
        self.map.get(&key(t)).ok_or(GpuError::NotUploaded)
    }

    /// Copies every tensor not yet uploaded into new pools.
    pub fn upload(&mut self, ctx: &GpuContext, tensors: &[&Tensor<'_>]) -> Result<(), GpuError> {
        let cap = ctx.max_binding() / PIECE_ALIGN * PIECE_ALIGN;
        // Plan: (pool, offset) of each piece, pool sizes.
        let first_pool = self.pools.len();
        let mut sizes: Vec<u64> = Vec::new();
        let mut plan: Vec<(usize, Entry)> = Vec::new(); // (tensor index, entry)
        let mut seen = std::collections::HashSet::new();
        for (ti, t) in tensors.iter().enumerate() {
            if self.map.contains_key(&key(t)) || !seen.insert(key(t)) {
                continue;
            }
            if !crate::shaders::supports(t.ty) {
                return Err(GpuError::UnsupportedType(t.ty));
            }
            let src_rb = t.ty.row_bytes(t.cols).ok_or(GpuError::BadShape)?;
            let rb = gpu_row_bytes(t.ty, t.cols).ok_or(GpuError::BadShape)?;
            if t.rows == 0
                || rb == 0
                || t.data.len() != src_rb * t.rows
                || !t.cols.is_multiple_of(32)
            {
                return Err(GpuError::BadShape);
            }
            if rb as u64 > cap {
                return Err(GpuError::TooLarge);
            }
            let mut pieces = Vec::new();
            let mut row = 0;
            while row < t.rows {
                let mut at =
                    sizes.last().copied().unwrap_or(cap).div_ceil(PIECE_ALIGN) * PIECE_ALIGN;
                if sizes.is_empty() || at + rb as u64 > cap {
                    sizes.push(0);
                    at = 0;
                }
                let fit = ((cap - at) / rb as u64) as usize;
                let rows = fit.min(t.rows - row);
                let pool = first_pool + sizes.len() - 1;
                *sizes.last_mut().unwrap_or(&mut 0) = at + (rows * rb) as u64;
                pieces.push(Piece {
                    pool,
                    base: u32::try_from(at).map_err(|_| GpuError::TooLarge)?,
                    row0: row,
                    rows,
                });
                row += rows;
            }
            plan.push((
                ti,
                Entry {
                    ty: t.ty,
                    rows: t.rows,
                    cols: t.cols,
                    row_bytes: rb,
                    pieces,
                },
            ));
        }
        let mut bufs: Vec<wgpu::Buffer> = sizes
            .iter()
            .map(|&s| {
                ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("weights"),
                    size: s.div_ceil(4).max(1) * 4,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
            .collect();
        for (ti, e) in &plan {
            let t = tensors[*ti];
            let src_rb = t.data.len() / t.rows;
            for p in &e.pieces {
                let bytes = &t.data[p.row0 * src_rb..(p.row0 + p.rows) * src_rb];
                let buf = &bufs[p.pool - first_pool];
                if e.ty == GgmlType::Q6_K {
                    write_padded(ctx, buf, p.base as u64, &pad_q6k(bytes));
                } else {
                    write_padded(ctx, buf, p.base as u64, bytes);
                }
            }
        }
        ctx.queue.submit([]);
        self.pools.append(&mut bufs);
        for (ti, e) in plan {
            self.map.insert(key(tensors[ti]), e);
        }
        Ok(())
    }
}

/// Q6_K blocks with [`Q6K_GPU_BLOCK`] - 210 zero bytes after each.
fn pad_q6k(bytes: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(bytes.len() / Q6K_BLOCK * Q6K_GPU_BLOCK);
    for b in bytes.chunks_exact(Q6K_BLOCK) {
        v.extend_from_slice(b);
        v.resize(v.len() + Q6K_GPU_BLOCK - Q6K_BLOCK, 0);
    }
    v
}

/// `queue.write_buffer` needs lengths in whole words: the tail is padded with zeros.
fn write_padded(ctx: &GpuContext, buf: &wgpu::Buffer, at: u64, bytes: &[u8]) {
    let whole = bytes.len() / 4 * 4;
    if whole > 0 {
        ctx.queue.write_buffer(buf, at, &bytes[..whole]);
    }
    if whole < bytes.len() {
        let mut tail = [0u8; 4];
        tail[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
        ctx.queue.write_buffer(buf, at + whole as u64, &tail);
    }
}

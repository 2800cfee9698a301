//! [`DeviceWeights`]: weight tensors copied to the device once, found again by tensor id.

use std::collections::HashMap;

use glimmer_core::model::{Tensor, Weights};
use glimmer_core::quant::GgmlType;

use crate::gpu::{DevMem, Gpu};
use crate::CudaError;

/// Each tensor starts at a multiple of this many bytes.
const ALIGN: usize = 256;

/// Bytes of one Q6_K super-block (256 weights): `ql` 128, `qh` 64, scales 16, `d` 2.
const Q6K_BLOCK: usize = 210;

/// Rows of Q6_K tensors are repacked on upload this many source bytes at a time.
const REPACK_CHUNK: usize = 32 << 20;

/// Bytes of one row of a `ty` tensor of `cols` columns on the device, given its bytes in the
/// file (`file_row`). Q6_K rows are repacked ([`repack_q6k_row`]) and padded to 16 bytes; every
/// other format is stored as in the file.
pub fn device_row_bytes(ty: GgmlType, file_row: usize) -> usize {
    match ty {
        GgmlType::Q6_K => file_row.div_ceil(16) * 16,
        _ => file_row,
    }
}

/// Repacks one Q6_K row from the file's array of 210-byte super-blocks into planes, so that
/// every 16 bytes a GEMV thread reads lie at a 16-byte aligned address (`kernels/gemv_k.cu`):
/// all `ql` (128 bytes a block), then all `qh` (64), all scales (16), all `d` (2), then zero
/// padding to `dst.len()`. `src` is a whole number of blocks; `dst` holds at least as many
/// bytes.
pub fn repack_q6k_row(src: &[u8], dst: &mut [u8]) {
    let nb = src.len() / Q6K_BLOCK;
    let (ql, rest) = dst.split_at_mut(128 * nb);
    let (qh, rest) = rest.split_at_mut(64 * nb);
    let (sc, rest) = rest.split_at_mut(16 * nb);
    let (d, pad) = rest.split_at_mut(2 * nb);
    for (b, blk) in src.chunks_exact(Q6K_BLOCK).enumerate() {
        ql[128 * b..128 * (b + 1)].copy_from_slice(&blk[..128]);
        qh[64 * b..64 * (b + 1)].copy_from_slice(&blk[128..192]);
        sc[16 * b..16 * (b + 1)].copy_from_slice(&blk[192..208]);
        d[2 * b..2 * (b + 1)].copy_from_slice(&blk[208..210]);
    }
    pad.fill(0);
}

/// Repacks whole Q6_K rows (`src`: rows of `file_row` bytes) into `dst` (rows of `row_bytes`,
/// [`device_row_bytes`]) with [`repack_q6k_row`], spread over up to `threads` threads (the
/// repacking is a byte shuffle bound by memory bandwidth, which one core does not fill). `dst`
/// must hold as many rows as `src`.
pub fn repack_q6k_rows(
    src: &[u8],
    file_row: usize,
    dst: &mut [u8],
    row_bytes: usize,
    threads: usize,
) {
    if file_row == 0 {
        return;
    }
    let rows = src.len() / file_row;
    // Below about 1 MiB a thread, starting it costs more than it saves.
    let threads = threads.min(src.len() >> 20).clamp(1, rows.max(1));
    let per = rows.div_ceil(threads).max(1);
    let work = |s: &[u8], d: &mut [u8]| {
        for (a, b) in s.chunks_exact(file_row).zip(d.chunks_exact_mut(row_bytes)) {
            repack_q6k_row(a, b);
        }
    };
    if threads == 1 {
        return work(src, dst);
    }
    std::thread::scope(|sc| {
        for (s, d) in src
            .chunks(per * file_row)
            .zip(dst.chunks_mut(per * row_bytes))
        {
            sc.spawn(move || work(s, d));
        }
    });
}

/// Threads [`DeviceWeights::add`] repacks Q6_K rows with: the host's parallelism, at most 16.
fn repack_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(16))
}

/// One uploaded tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceTensor {
    /// Device address of row 0.
    pub ptr: u64,
    /// Block format.
    pub ty: GgmlType,
    /// Rows.
    pub rows: usize,
    /// Elements per row.
    pub cols: usize,
    /// Bytes per row on the device (`device_row_bytes`: Q6_K rows are repacked and
    /// padded).
    pub row_bytes: usize,
}

/// Weights on the device, in one allocation per [`DeviceWeights::add`] call.
#[derive(Default)]
pub struct DeviceWeights {
    mem: Vec<DevMem>,
    table: HashMap<u32, DeviceTensor>,
    bytes: u64,
}

impl DeviceWeights {
    /// No weights yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uploads every tensor of a model (the embedding table and the head even when tied).
    pub fn add_model(&mut self, gpu: &Gpu, w: &Weights<'_>) -> Result<(), CudaError> {
        let mut all: Vec<Tensor<'_>> = vec![w.tok_embd, w.output_norm, w.output];
        for l in w.layers.iter() {
            all.extend(l.tensors().copied());
        }
        self.add(gpu, &all)
    }

    /// Uploads `tensors` (skipping ids already on the device) into one new allocation.
    pub fn add(&mut self, gpu: &Gpu, tensors: &[Tensor<'_>]) -> Result<(), CudaError> {
        let mut offs = Vec::with_capacity(tensors.len());
        let mut total = 0usize;
        for t in tensors {
            let rb = t.ty.row_bytes(t.cols).ok_or(CudaError::Overflow)?;
            if rb.checked_mul(t.rows) != Some(t.data.len()) {
                return Err(CudaError::UnknownWeight(t.id));
            }
            if self.table.contains_key(&t.id) || offs.iter().any(|&(id, _)| id == t.id) {
                continue;
            }
            offs.push((t.id, total));
            let dev_len = device_row_bytes(t.ty, rb)
                .checked_mul(t.rows)
                .ok_or(CudaError::Overflow)?;
            total = total
                .checked_add(dev_len)
                .and_then(|v| v.checked_add(ALIGN - 1))
                .ok_or(CudaError::Overflow)?
                & !(ALIGN - 1);
        }
        if offs.is_empty() {
            return Ok(());
        }
        let mem = gpu.alloc(total)?;
        // Staging for repacked Q6_K rows, shared by every such tensor of this call.
        let mut buf: Vec<u8> = Vec::new();
        let threads = repack_threads();
        for (id, off) in offs {
            // The id is in `tensors` (it was collected from there).
            let Some(t) = tensors.iter().find(|t| t.id == id) else {
                continue;
            };
            let file_row = t.data.len() / t.rows.max(1);
            let row_bytes = device_row_bytes(t.ty, file_row);
            let ptr = mem.ptr() + off as u64;
            if t.ty == GgmlType::Q6_K && file_row > 0 {
                // Repacked a few MiB of rows at a time; the copy stages pageable memory before
                // it returns, so the buffer is reused at once (every row of it is rewritten
                // before it is sent).
                let rows_per = (REPACK_CHUNK / file_row).max(1);
                buf.resize(rows_per.min(t.rows) * row_bytes, 0);
                for (i, rows) in t.data.chunks(rows_per * file_row).enumerate() {
                    let n = rows.len() / file_row;
                    repack_q6k_rows(rows, file_row, &mut buf, row_bytes, threads);
                    let at = ptr + (i * rows_per * row_bytes) as u64;
                    gpu.upload(at, &buf[..n * row_bytes])?;
                }
            } else {
                gpu.upload(ptr, t.data)?;
            }
            self.table.insert(
                id,
                DeviceTensor {
                    ptr,
                    ty: t.ty,
                    rows: t.rows,
                    cols: t.cols,
                    row_bytes,
                },
            );
            self.bytes += t.data.len() as u64;
        }
        gpu.synchronize()?;
        self.mem.push(mem);
        Ok(())
    }

    /// The device copy of `t`, checked to have the same format and shape.
    pub fn get(&self, t: &Tensor<'_>) -> Result<DeviceTensor, CudaError> {
        match self.table.get(&t.id) {
            Some(d) if d.ty == t.ty && d.rows == t.rows && d.cols == t.cols => Ok(*d),
            _ => Err(CudaError::UnknownWeight(t.id)),
        }
    }

    /// How many tensors are on the device.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no tensor is on the device yet.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Bytes of tensor data on the device.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::{device_row_bytes, repack_q6k_row, repack_q6k_rows, Q6K_BLOCK};
    use glimmer_core::quant::GgmlType;

    #[test]
    fn q6k_rows_become_aligned_planes() {
        let nb = 3;
        let src: Vec<u8> = (0..nb * Q6K_BLOCK).map(|i| (i * 7 % 251) as u8).collect();
        let rb = device_row_bytes(GgmlType::Q6_K, src.len());
        assert_eq!(rb, 640);
        let mut dst = vec![0xAAu8; rb];
        repack_q6k_row(&src, &mut dst);
        for b in 0..nb {
            let blk = &src[b * Q6K_BLOCK..(b + 1) * Q6K_BLOCK];
            assert_eq!(&dst[128 * b..128 * b + 128], &blk[..128]);
            assert_eq!(&dst[128 * nb + 64 * b..][..64], &blk[128..192]);
            assert_eq!(&dst[192 * nb + 16 * b..][..16], &blk[192..208]);
            assert_eq!(&dst[208 * nb + 2 * b..][..2], &blk[208..210]);
        }
        assert!(dst[210 * nb..].iter().all(|&b| b == 0));
        // Other formats keep the file's rows.
        assert_eq!(device_row_bytes(GgmlType::Q4_K, 3744), 3744);
    }

    #[test]
    fn threaded_repacking_matches_row_by_row() {
        // 700 rows of 26 blocks (the 30B shape's 6656 columns): about 3.8 MB, so up to three
        // threads take part; a ragged last share.
        let (nb, rows) = (26, 700);
        let file_row = nb * Q6K_BLOCK;
        let row_bytes = device_row_bytes(glimmer_core::quant::GgmlType::Q6_K, file_row);
        let mut x = 0x2545_f491_u32;
        let src: Vec<u8> = (0..rows * file_row)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let mut one = vec![0xAAu8; rows * row_bytes];
        for (s, d) in src
            .chunks_exact(file_row)
            .zip(one.chunks_exact_mut(row_bytes))
        {
            repack_q6k_row(s, d);
        }
        for threads in [1, 2, 3, 7] {
            let mut many = vec![0x55u8; rows * row_bytes];
            repack_q6k_rows(&src, file_row, &mut many, row_bytes, threads);
            assert!(one == many, "{threads} threads");
        }
    }
}

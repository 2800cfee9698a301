//! Seeded random tensor contents, generated and quantized chunk by chunk while the file is
//! written, so no tensor is ever held whole in memory.
//!
//! Every chunk of rows has its own ChaCha8 stream, seeded from (model seed, tensor index, chunk
//! index), so the bytes do not depend on how many threads produce them. Values are drawn with
//! integer arithmetic and one f32 multiply (no `ln`/`sin`, whose last bits vary between math
//! libraries), so the file is the same on every platform.

use std::io::{self, Write};

use glimmer_core::quant::{quantize_weights, GgmlType};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Elements generated per chunk (about 4 MiB of f32 per worker).
const CHUNK_ELEMS: usize = 1 << 20;
/// Most worker threads a tensor uses.
const MAX_WORKERS: usize = 16;

/// splitmix64 of `a` perturbed by `b`: derives independent stream seeds.
pub(super) fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform draw in `0..n` from one 64-bit word (multiply-shift; bias below 2^-32 for the
/// sizes used here).
pub(super) fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    ((u128::from(rng.next_u64()) * n as u128) >> 64) as usize
}

/// An approximately standard normal value from one 64-bit word: the sum of its four 16-bit
/// quarters (Irwin–Hall, n = 4), centred and scaled to unit variance. Bounded by ±2√3.
fn unit_normal(r: u64) -> f32 {
    let s = (r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48);
    // Mean 4 · 65535/2; variance 4 · (65536² − 1)/12 ≈ 65536²/3.
    (s as f32 - 131_070.0) * (1.732_050_8 / 65_536.0)
}

/// Scales some rows of a matrix: rows `r` with `lo <= r % period < hi` are multiplied by
/// `factor`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct RowDamp {
    /// Row period (the head width).
    pub period: usize,
    /// First damped row of each period.
    pub lo: usize,
    /// End of the damped rows of each period.
    pub hi: usize,
    /// Factor of the damped rows.
    pub factor: f32,
}

impl RowDamp {
    /// No damping.
    pub const NONE: Self = Self {
        period: 1,
        lo: 0,
        hi: 0,
        factor: 1.0,
    };

    /// The factor of row `r`.
    fn of(&self, r: usize) -> f32 {
        let i = r % self.period.max(1);
        if (self.lo..self.hi).contains(&i) {
            self.factor
        } else {
            1.0
        }
    }
}

/// What a tensor's values are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Fill {
    /// Independent draws with standard deviation `std` (times the row's damping).
    Normal {
        /// Standard deviation.
        std: f32,
        /// Rows scaled down.
        damp: RowDamp,
    },
    /// Norm gains: `1 + noise · z`.
    Gain {
        /// Standard deviation of the deviation from 1.
        noise: f32,
    },
}

/// One tensor to generate: `n_rows` rows of `ne0` values, stored as `ty`.
#[derive(Clone, Copy, Debug)]
pub(super) struct TensorGen {
    /// Storage type.
    pub ty: GgmlType,
    /// Row length.
    pub ne0: usize,
    /// Number of rows.
    pub n_rows: usize,
    /// Value distribution.
    pub fill: Fill,
    /// Seed of this tensor (already mixed with the model seed and tensor index).
    pub seed: u64,
}

impl TensorGen {
    /// Rows per chunk: whole rows of about [`CHUNK_ELEMS`] values.
    fn rows_per_chunk(&self) -> usize {
        (CHUNK_ELEMS / self.ne0.max(1)).max(1)
    }

    /// Fills `out` with the stored bytes of chunk `c`.
    fn chunk(&self, c: usize, vals: &mut Vec<f32>, out: &mut Vec<u8>) -> io::Result<()> {
        let rpc = self.rows_per_chunk();
        let first = c * rpc;
        let rows = rpc.min(self.n_rows - first);
        let mut rng = ChaCha8Rng::seed_from_u64(mix(self.seed, c as u64));
        vals.clear();
        for r in first..first + rows {
            let (scale, offset) = match self.fill {
                Fill::Normal { std, damp } => (std * damp.of(r), 0.0),
                Fill::Gain { noise } => (noise, 1.0),
            };
            vals.extend((0..self.ne0).map(|_| offset + scale * unit_normal(rng.next_u64())));
        }
        let row_bytes = self
            .ty
            .row_bytes(self.ne0)
            .ok_or_else(|| io::Error::other("row size overflows"))?;
        out.clear();
        out.resize(rows * row_bytes, 0);
        quantize_weights(self.ty, vals, out).map_err(io::Error::other)
    }

    /// Writes every row, in order, generating up to one chunk per core (at most
    /// [`MAX_WORKERS`]) at a time.
    pub(super) fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.write_with(out, cores.min(MAX_WORKERS))
    }

    /// [`TensorGen::write`] with `workers` threads; the bytes do not depend on `workers`.
    pub(super) fn write_with(&self, out: &mut dyn Write, workers: usize) -> io::Result<()> {
        let n_chunks = self.n_rows.div_ceil(self.rows_per_chunk());
        let workers = workers.clamp(1, n_chunks.max(1));
        let mut bufs: Vec<(Vec<f32>, Vec<u8>)> = vec![(Vec::new(), Vec::new()); workers];
        let mut c = 0;
        while c < n_chunks {
            let batch = workers.min(n_chunks - c);
            if batch == 1 {
                let (vals, bytes) = &mut bufs[0];
                self.chunk(c, vals, bytes)?;
            } else {
                std::thread::scope(|s| {
                    let handles: Vec<_> = bufs[..batch]
                        .iter_mut()
                        .enumerate()
                        .map(|(k, (vals, bytes))| s.spawn(move || self.chunk(c + k, vals, bytes)))
                        .collect();
                    handles.into_iter().try_for_each(|h| {
                        h.join()
                            .map_err(|_| io::Error::other("generator thread panicked"))?
                    })
                })?;
            }
            for (_, bytes) in &bufs[..batch] {
                out.write_all(bytes)?;
            }
            c += batch;
        }
        Ok(())
    }
}

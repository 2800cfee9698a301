//! `glimmer bench`: prefill and decode speed on the CPU backend, next to the machine's memory
//! bandwidth and the bytes a decoded token has to read.
//!
//! Decoding a small model is memory bound: each token reads every weight of the layers and the
//! output head once, plus the KV cache so far. [`decode_bytes_per_token`] counts those bytes
//! from the model's tensors, [`stream_read_bandwidth`] measures what the threads can stream
//! from DRAM, and their ratio is the fastest decode the machine allows.

use std::time::Instant;

use glimmer_core::exec::{Limits, LogitRows, Parallel};
use glimmer_core::model::{LayerKind, ModelSpec, Weights};

use crate::engine::{Engine, Loaded};
use crate::pool::Pool;
use crate::profile::OpTimes;
use crate::Error;

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Prompt token ids (prefilled in one timed call).
    pub prompt: Vec<u32>,
    /// Tokens to decode greedily after the prompt (timed one by one).
    pub gen: usize,
    /// Threads (the calling thread included).
    pub threads: usize,
    /// Prefill chunk (rows per forward call).
    pub chunk: usize,
    /// Bytes of the bandwidth test's buffer.
    pub stream_bytes: usize,
    /// Time every backend op during the timed prefill and decode ([`BenchReport::prefill_ops`],
    /// [`BenchReport::decode_ops`]); adds two clock reads per op.
    pub profile: bool,
}

/// What [`run`] measured.
#[derive(Clone, Debug)]
pub struct BenchReport {
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Prefill time, seconds.
    pub prefill_s: f64,
    /// Tokens decoded.
    pub gen_tokens: usize,
    /// Decode time, seconds (forward calls only; greedy argmax included).
    pub decode_s: f64,
    /// Streaming-read bandwidth, bytes per second (best of several passes).
    pub bandwidth: f64,
    /// Weight bytes one decoded token reads.
    pub weight_bytes: f64,
    /// KV-cache bytes one decoded token reads, averaged over the decoded positions.
    pub kv_bytes: f64,
    /// The greedy tokens decoded (for checking against another implementation).
    pub tokens: Vec<u32>,
    /// Per-op times of the timed prefill (with [`BenchConfig::profile`]).
    pub prefill_ops: Option<OpTimes>,
    /// Per-op times of the decode steps (with [`BenchConfig::profile`]).
    pub decode_ops: Option<OpTimes>,
}

impl BenchReport {
    /// Prefill tokens per second.
    pub fn prefill_tps(&self) -> f64 {
        self.prompt_tokens as f64 / self.prefill_s.max(1e-12)
    }

    /// Decode tokens per second.
    pub fn decode_tps(&self) -> f64 {
        self.gen_tokens as f64 / self.decode_s.max(1e-12)
    }

    /// Bytes one decoded token reads (weights + KV).
    pub fn bytes_per_token(&self) -> f64 {
        self.weight_bytes + self.kv_bytes
    }

    /// The decode speed the bandwidth allows, tokens per second.
    pub fn limit_tps(&self) -> f64 {
        self.bandwidth / self.bytes_per_token().max(1.0)
    }
}

/// Weight bytes one decoded token reads: every matrix of every layer, the norm vectors, the
/// output head (the whole table, also when it is tied to the embedding) and one embedding row.
pub fn decode_weight_bytes(w: &Weights<'_>) -> usize {
    let mut total = w.output.data.len() + w.output_norm.data.len() + w.tok_embd.row_bytes();
    for l in w.layers.iter() {
        total += l.tensors().map(|t| t.data.len()).sum::<usize>();
    }
    total
}

/// KV-cache bytes (f16 keys and values) the token at `pos` reads across all layers.
pub fn decode_kv_bytes(s: &ModelSpec, pos: usize) -> usize {
    (0..s.n_layer)
        .map(|il| {
            let seen = match s.layer_kind(il) {
                LayerKind::Global => pos + 1,
                LayerKind::Sliding { window } => (pos + 1).min(window as usize),
            };
            seen * (s.k_dim() + s.v_dim()) * 2
        })
        .sum()
}

/// Weight and mean KV bytes per token for decoding positions `first..first + n`.
pub fn decode_bytes_per_token(loaded: &Loaded<'_>, first: usize, n: usize) -> (f64, f64) {
    let w = decode_weight_bytes(&loaded.weights) as f64;
    let kv: usize = (first..first + n.max(1))
        .map(|p| decode_kv_bytes(&loaded.spec, p))
        .sum();
    (w, kv as f64 / n.max(1) as f64)
}

/// Streams `bytes` of memory with every thread of `par` (each sums its own part) and returns
/// the best of `passes` passes, in bytes per second.
pub fn stream_read_bandwidth(par: &dyn Parallel, bytes: usize, passes: usize) -> f64 {
    let words = (bytes / 8).max(1024);
    // Non-zero contents: every page is really backed (no shared zero page).
    let buf: Vec<u64> = (0..words as u64).collect();
    let tasks = par.threads();
    let sink = std::sync::atomic::AtomicU64::new(0);
    let mut best = 0.0f64;
    for _ in 0..passes.max(1) {
        let t0 = Instant::now();
        par.run(tasks, &|t| {
            let r = glimmer_core::exec::split_range(words, tasks, 8, t);
            let (chunks, tail) = buf[r].as_chunks::<8>();
            let mut acc = [0u64; 8];
            for c in chunks {
                for (a, &v) in acc.iter_mut().zip(c) {
                    *a = a.wrapping_add(v);
                }
            }
            let s = acc.iter().chain(tail).fold(0u64, |s, &v| s.wrapping_add(v));
            sink.fetch_add(s, std::sync::atomic::Ordering::Relaxed);
        });
        let dt = t0.elapsed().as_secs_f64();
        best = best.max((words * 8) as f64 / dt.max(1e-12));
    }
    std::hint::black_box(sink.into_inner());
    best
}

/// The bandwidth test's default buffer: four times the last-level cache (from sysfs), at least
/// 1 GiB.
pub fn default_stream_bytes() -> usize {
    let llc = (0..8)
        .filter_map(|i| {
            let p = format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size");
            let s = std::fs::read_to_string(p).ok()?;
            let s = s.trim();
            let (num, mul) = match s.strip_suffix('K') {
                Some(n) => (n, 1usize << 10),
                None => match s.strip_suffix('M') {
                    Some(n) => (n, 1 << 20),
                    None => (s, 1),
                },
            };
            num.parse::<usize>().ok().map(|n| n * mul)
        })
        .max()
        .unwrap_or(0);
    (4 * llc).max(1 << 30)
}

fn argmax(x: &[f32]) -> u32 {
    let mut best = 0usize;
    for (i, &v) in x.iter().enumerate() {
        if v > x[best] {
            best = i;
        }
    }
    best as u32
}

/// Runs the benchmark: a warm-up prefill, the timed prefill of the whole prompt, `gen` timed
/// greedy decode steps, then the bandwidth test on a pool of the same size.
// `Error` is large but only travels on the cold path.
#[allow(clippy::result_large_err)]
pub fn run(loaded: &Loaded<'_>, cfg: &BenchConfig) -> Result<BenchReport, Error> {
    let n = cfg.prompt.len();
    let ctx = n + cfg.gen + 1;
    let limits = Limits {
        chunk: cfg.chunk.clamp(1, glimmer_core::exec::MAX_CHUNK),
        logit_rows: 1,
        ctx,
        threads: cfg.threads,
    };
    let mut engine = Engine::with_threads(loaded, limits, cfg.threads)?;
    let mut logits = vec![0.0f32; loaded.spec.n_vocab];
    // Warm-up: pages the weights in and settles the clocks.
    engine.forward(&cfg.prompt, LogitRows::Last, &mut logits)?;
    engine.reset();

    engine.set_profiling(cfg.profile);
    let t0 = Instant::now();
    engine.forward(&cfg.prompt, LogitRows::Last, &mut logits)?;
    let prefill_s = t0.elapsed().as_secs_f64();
    let prefill_ops = engine.op_times().copied();
    engine.set_profiling(cfg.profile);

    let mut tokens = Vec::with_capacity(cfg.gen);
    let t1 = Instant::now();
    for _ in 0..cfg.gen {
        let next = argmax(&logits);
        tokens.push(next);
        engine.forward(&[next], LogitRows::Last, &mut logits)?;
    }
    let decode_s = t1.elapsed().as_secs_f64();
    let decode_ops = engine.op_times().copied();
    drop(engine);

    let pool = Pool::new(cfg.threads).map_err(|e| Error::Io("spawning threads".into(), e))?;
    let bandwidth = stream_read_bandwidth(&pool, cfg.stream_bytes, 5);
    let (weight_bytes, kv_bytes) = decode_bytes_per_token(loaded, n, cfg.gen);
    Ok(BenchReport {
        prompt_tokens: n,
        prefill_s,
        gen_tokens: cfg.gen,
        decode_s,
        bandwidth,
        weight_bytes,
        kv_bytes,
        tokens,
        prefill_ops,
        decode_ops,
    })
}

/// A prompt of exactly `n` token ids: `text` tokenized (with BOS) and repeated, cut to `n`.
#[allow(clippy::result_large_err)]
pub fn prompt_ids(loaded: &Loaded<'_>, text: &str, n: usize) -> Result<Vec<u32>, Error> {
    let first = loaded.tokenizer.encode(text, true, true)?;
    let more = loaded.tokenizer.encode(text, false, true)?;
    let mut ids = first;
    while ids.len() < n && !more.is_empty() {
        ids.extend_from_slice(&more);
    }
    ids.truncate(n);
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_is_finite_and_positive() {
        let pool = Pool::new(2).unwrap();
        let bw = stream_read_bandwidth(&pool, 8 << 20, 2);
        assert!(bw.is_finite() && bw > 1e6, "{bw}");
    }

    #[test]
    fn argmax_takes_the_first_maximum() {
        assert_eq!(argmax(&[0.0, 3.0, -1.0, 3.0]), 1);
        assert_eq!(argmax(&[5.0]), 0);
    }
}

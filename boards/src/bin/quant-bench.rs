//! `quant-bench`: throughput of the quantized matmul kernels, scalar against SIMD.
//!
//! For each weight type a matrix of rows of `--n` elements is dotted with one activation row
//! by `Kernels::dot_rows`; the table gives the weight bytes streamed per second for the
//! scalar kernels and for every SIMD tier this CPU can run, once with the matrix resident in
//! L2 (compute-bound) and once far larger than the last-level cache (memory-bound), next to
//! a plain streaming read of memory measured in the same run. A second table times the
//! prefill tile kernels (`Kernels::dot_tile`: a cache-resident tile of weight rows against
//! `--tile-acts` activation rows) in multiply-adds per second, each tier against the one-row
//! kernel of the same tier on the same data (`dot_rows` once per activation row). A third
//! table times the activation quantizers on one row. Everything runs on one thread.

use std::hint::black_box;
use std::time::Instant;

use clap::Parser;
use glimmer_boards::cpu_features;
use glimmer_core::quant::{
    quantize_weights, vec_dot_type, CpuFeatures, Feature, GgmlType, Isa, Kernels,
};

/// Quantized dot-product and quantizer throughput, scalar against SIMD (single thread).
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Args {
    /// Elements per weight row.
    #[arg(long, default_value_t = 4096)]
    n: usize,
    /// Size of the cache-resident matrix in KiB (should fit L2).
    #[arg(long, default_value_t = 1024)]
    cache_kib: usize,
    /// Size of the memory-resident matrix in MiB (make it well above the last-level cache).
    #[arg(long, default_value_t = 1024)]
    dram_mib: usize,
    /// Seconds per measurement (each is the best of three).
    #[arg(long, default_value_t = 0.3)]
    secs: f64,
    /// Skip the memory-resident runs.
    #[arg(long)]
    no_dram: bool,
    /// Only these weight types (comma-separated GGUF names, e.g. `q4_0,q6_K`).
    #[arg(long, value_delimiter = ',')]
    types: Vec<String>,
    /// Only the scalar kernels and the best tier.
    #[arg(long)]
    best_only: bool,
    /// Weight rows of the tile-kernel table's matrix.
    #[arg(long, default_value_t = 16)]
    tile_rows: usize,
    /// Activation rows of the tile-kernel table (as a prefill chunk passes them).
    #[arg(long, default_value_t = 64)]
    tile_acts: usize,
}

const DOT_TYPES: [GgmlType; 7] = [
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q8_0,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
];

/// xorshift64*: test data only.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Roughly normal values of magnitude about `scale`.
    fn data(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n)
            .map(|_| {
                let s: f32 = (0..4)
                    .map(|_| (self.next() >> 40) as f32 / 16_777_216.0)
                    .sum();
                (s - 2.0) * scale
            })
            .collect()
    }
}

/// Best rate (units per second) of `f`, which processes `units` per call, over three trials
/// of at least `secs` each (at least one call per trial).
fn rate(units: f64, secs: f64, mut f: impl FnMut()) -> f64 {
    f();
    let mut best = 0.0f64;
    for _ in 0..3 {
        let t = Instant::now();
        let mut calls = 0u64;
        while calls == 0 || t.elapsed().as_secs_f64() < secs {
            f();
            calls += 1;
        }
        best = best.max(units * calls as f64 / t.elapsed().as_secs_f64());
    }
    best
}

/// Reads all of `buf` with eight independent sums (the compiler vectorizes the loop).
fn stream_read(buf: &[u64]) -> u64 {
    let mut acc = [0u64; 8];
    for c in buf.chunks_exact(8) {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = a.wrapping_add(v);
        }
    }
    acc.iter().fold(0, |a, &b| a.wrapping_add(b))
}

/// One table per distinct kernel choice: scalar, then every tier the features allow.
fn tiers(full: CpuFeatures) -> Vec<Kernels> {
    let present: Vec<Feature> = Feature::ALL.into_iter().filter(|&f| full.has(f)).collect();
    let mut out: Vec<Kernels> = vec![Kernels::scalar()];
    let mut seen: Vec<Vec<Isa>> = vec![DOT_TYPES.iter().map(|_| Isa::Scalar).collect()];
    for mask in 0u32..(1 << present.len()) {
        let mut f = full;
        for (i, &feat) in present.iter().enumerate() {
            if mask & (1 << i) != 0 {
                f = f.without(feat);
            }
        }
        let k = Kernels::select(f);
        let sig: Vec<Isa> = DOT_TYPES.iter().map(|&t| k.dot_isa(t)).collect();
        if !seen.contains(&sig) {
            seen.push(sig);
            out.push(k);
        }
    }
    out
}

/// A weight matrix of about `bytes` bytes (whole rows of `n`), built by repeating 64
/// quantized random rows.
fn matrix(ty: GgmlType, n: usize, bytes: usize, rng: &mut Rng) -> (Vec<u8>, usize) {
    let rb = ty.row_bytes(n).expect("n is whole blocks");
    let rows = (bytes / rb).max(1);
    let base_rows = rows.min(64);
    let mut base = vec![0u8; base_rows * rb];
    for row in base.chunks_exact_mut(rb) {
        quantize_weights(ty, &rng.data(n, 0.05), row).expect("quantize weights");
    }
    let mut w = Vec::with_capacity(rows * rb);
    while w.len() < rows * rb {
        let take = (rows * rb - w.len()).min(base.len());
        w.extend_from_slice(&base[..take]);
    }
    (w, rows)
}

fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

fn main() {
    let args = Args::parse();
    let n = args.n;
    if n == 0 || !n.is_multiple_of(32) {
        eprintln!("--n must be a positive multiple of 32 (of 256 for the K-quants)");
        std::process::exit(2);
    }
    let features = cpu_features::detect();
    let mut tiers = tiers(features);
    if args.best_only {
        tiers.drain(2..);
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    println!(
        "cpu: {}; detected: {features}; one thread; rows of {n}",
        cpu_name()
    );

    let mem_bw = if args.no_dram {
        None
    } else {
        let buf = vec![1u64; args.dram_mib * 1024 * 1024 / 8];
        let bytes = (buf.len() * 8) as f64;
        let bw = rate(bytes, args.secs, || {
            black_box(stream_read(black_box(&buf)));
        });
        println!(
            "streaming read of {} MiB: {:.1} GB/s",
            args.dram_mib,
            bw / 1e9
        );
        Some(bw)
    };

    let act_x = rng.data(n, 1.0);
    println!();
    println!(
        "{:<6} {:>6} {:<12} {:>10} {:>9} {:>11} {:>8}",
        "type", "B/row", "kernel", "L2 GB/s", "vs scalar", "DRAM GB/s", "% read"
    );
    for ty in DOT_TYPES {
        let wanted = args.types.is_empty() || args.types.iter().any(|t| t == ty.name());
        if !wanted || !n.is_multiple_of(ty.block_size()) {
            continue;
        }
        let aty = vec_dot_type(ty);
        let mut act = vec![0u8; aty.row_bytes(n).expect("row")];
        Kernels::scalar()
            .quantize_row(aty, &act_x, &mut act)
            .expect("quantize activations");
        let (wc, rows_c) = matrix(ty, n, args.cache_kib * 1024, &mut rng);
        let big = (!args.no_dram).then(|| matrix(ty, n, args.dram_mib * 1024 * 1024, &mut rng));
        let mut scalar_rate = 0.0;
        for k in &tiers {
            let mut out = vec![0.0f32; rows_c];
            let l2 = rate(wc.len() as f64, args.secs, || {
                k.dot_rows(ty, n, black_box(&wc), black_box(&act), &mut out)
                    .expect("dot_rows");
                black_box(&out);
            });
            if k.dot_isa(ty) == Isa::Scalar {
                scalar_rate = l2;
            }
            let dram = big.as_ref().map(|(wd, rows_d)| {
                let mut out = vec![0.0f32; *rows_d];
                rate(wd.len() as f64, args.secs, || {
                    k.dot_rows(ty, n, black_box(wd), black_box(&act), &mut out)
                        .expect("dot_rows");
                    black_box(&out);
                })
            });
            let (dram_s, pct) = match (dram, mem_bw) {
                (Some(d), Some(m)) => (format!("{:.1}", d / 1e9), format!("{:.0}%", 100.0 * d / m)),
                _ => ("-".into(), "-".into()),
            };
            println!(
                "{:<6} {:>6} {:<12} {:>10.1} {:>8.1}x {:>11} {:>8}",
                ty.name(),
                ty.row_bytes(n).unwrap_or(0),
                k.dot_isa(ty).name(),
                l2 / 1e9,
                l2 / scalar_rate,
                dram_s,
                pct
            );
        }
    }

    println!();
    println!(
        "tile kernels: {} weight rows x {} activation rows of {n}",
        args.tile_rows, args.tile_acts
    );
    println!(
        "{:<6} {:<12} {:>12} {:>16} {:>8}",
        "type", "kernel", "tile GMAC/s", "one-row GMAC/s", "ratio"
    );
    for ty in DOT_TYPES {
        let wanted = args.types.is_empty() || args.types.iter().any(|t| t == ty.name());
        if !wanted || !n.is_multiple_of(ty.block_size()) {
            continue;
        }
        let aty = vec_dot_type(ty);
        let ab = aty.row_bytes(n).expect("row");
        let xs = rng.data(n * args.tile_acts, 1.0);
        let mut acts = vec![0u8; ab * args.tile_acts];
        for (x, a) in xs.chunks_exact(n).zip(acts.chunks_exact_mut(ab)) {
            Kernels::scalar()
                .quantize_row(aty, x, a)
                .expect("quantize activations");
        }
        let rb = ty.row_bytes(n).expect("row");
        let (w, m) = matrix(ty, n, args.tile_rows * rb, &mut rng);
        let macs = (m * n * args.tile_acts) as f64;
        let mut done: Vec<Isa> = Vec::new();
        for k in &tiers {
            let isa = k.dot_isa(ty);
            if isa == Isa::Scalar || done.contains(&isa) {
                continue;
            }
            done.push(isa);
            let mut out = vec![0.0f32; m * args.tile_acts];
            let tile = rate(macs, args.secs, || {
                k.dot_tile(ty, n, black_box(&w), black_box(&acts), &mut out)
                    .expect("dot_tile");
                black_box(&out);
            });
            let rows = rate(macs, args.secs, || {
                for (a, o) in acts.chunks_exact(ab).zip(out.chunks_exact_mut(m)) {
                    k.dot_rows(ty, n, black_box(&w), black_box(a), o)
                        .expect("dot_rows");
                }
                black_box(&out);
            });
            println!(
                "{:<6} {:<12} {:>12.1} {:>16.1} {:>7.2}x",
                ty.name(),
                isa.name(),
                tile / 1e9,
                rows / 1e9,
                tile / rows
            );
        }
    }

    println!();
    println!(
        "{:<6} {:<12} {:>12} {:>14} {:>9}",
        "act", "kernel", "ns per row", "GB/s of f32", "vs scalar"
    );
    for aty in [GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K] {
        if !n.is_multiple_of(aty.block_size()) {
            continue;
        }
        let mut out = vec![0u8; aty.row_bytes(n).expect("row")];
        let mut scalar_rate = 0.0;
        let mut done: Vec<Isa> = Vec::new();
        for k in &tiers {
            let isa = k.quantize_isa(aty);
            if done.contains(&isa) {
                continue;
            }
            done.push(isa);
            let r = rate(1.0, args.secs, || {
                k.quantize_row(aty, black_box(&act_x), &mut out)
                    .expect("quantize_row");
                black_box(&out);
            });
            if isa == Isa::Scalar {
                scalar_rate = r;
            }
            println!(
                "{:<6} {:<12} {:>12.0} {:>14.1} {:>8.1}x",
                aty.name(),
                isa.name(),
                1e9 / r,
                r * (n * 4) as f64 / 1e9,
                r / scalar_rate
            );
        }
    }
}

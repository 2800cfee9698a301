//! Command-line dispatch.
use crate::{bench, e2e, ops, timeline};

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;

use glimmer_boards::synth::{write_synth, Mix, SynthConfig};
use glimmer_core::quant::GgmlType;
use glimmer_jetson::{CudaError, Gpu};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn num(args: &[String], name: &str, default: usize) -> Result<usize, String> {
    match arg(args, name) {
        Some(v) => v.parse().map_err(|_| format!("{name}: not a number: {v}")),
        None => Ok(default),
    }
}

fn synth(args: &[String]) -> Result<(), String> {
    let out = arg(args, "--out").ok_or("--out PATH is required")?;
    let mut cfg = if args.iter().any(|a| a == "--full") {
        SynthConfig::full()
    } else {
        SynthConfig::tiny()
    };
    if let Some(t) = arg(args, "--type") {
        let (ty, mix) = match t.as_str() {
            "q4_k_m" => (GgmlType::Q4_K, Mix::Q4KM),
            "q8_0" => (GgmlType::Q8_0, Mix::Uniform),
            "q4_0" => (GgmlType::Q4_0, Mix::Uniform),
            "q4_1" => (GgmlType::Q4_1, Mix::Uniform),
            "q5_0" => (GgmlType::Q5_0, Mix::Uniform),
            "q4_k" => (GgmlType::Q4_K, Mix::Uniform),
            "q5_k" => (GgmlType::Q5_K, Mix::Uniform),
            "q6_k" => (GgmlType::Q6_K, Mix::Uniform),
            "f16" => (GgmlType::F16, Mix::Uniform),
            "f32" => (GgmlType::F32, Mix::Uniform),
            other => return Err(format!("unknown type {other}")),
        };
        cfg = cfg.with_type(ty, mix);
    }
    // Shape overrides, for mid-sized checks (kernels that only engage on wide rows).
    cfg.dim = num(args, "--dim", cfg.dim)?;
    cfg.n_ff = num(args, "--ff", cfg.n_ff)?;
    cfg.vocab = num(args, "--vocab", cfg.vocab)?;
    cfg.n_layer = num(args, "--layers", cfg.n_layer)?;
    let t = std::time::Instant::now();
    let f = File::create(&out).map_err(|e| format!("{out}: {e}"))?;
    let n = write_synth(&cfg, BufWriter::with_capacity(8 << 20, f), |_, _| {})
        .map_err(|e| e.to_string())?;
    println!(
        "wrote {out}: {:.2} GB in {:.1} s",
        n as f64 / 1e9,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

fn open_gpu() -> Result<std::sync::Arc<Gpu>, CudaError> {
    let gpu = Gpu::open(0)?;
    let (a, b) = gpu.compute_capability();
    println!(
        "device: {} (sm_{a}{b}, {} SMs, {:.0} GiB, peak memory bandwidth {:.0} GB/s by the driver's clock and bus width)",
        gpu.name(),
        gpu.sm_count(),
        gpu.total_mem() as f64 / (1u64 << 30) as f64,
        gpu.peak_bandwidth_gbs()
    );
    Ok(gpu)
}

/// Parses the command line and runs one subcommand.
/// Host-side Q6_K repacking throughput (no GPU): `--mib N` of 6656-column Q6_K rows (the 30B
/// shape's FFN down and output head) repacked on one thread and on all, each the best of
/// three, beside a plain copy of the same bytes on one thread measured in the same run.
fn repack(args: &[String]) -> Result<(), String> {
    use glimmer_jetson::{device_row_bytes, repack_q6k_rows};
    use std::time::Instant;
    let mib = num(args, "--mib", 512)?;
    let file_row = 26 * 210;
    let row_bytes = device_row_bytes(GgmlType::Q6_K, file_row);
    let rows = (mib << 20) / file_row;
    let src: Vec<u8> = (0..rows * file_row).map(|i| (i * 131 + 7) as u8).collect();
    let mut dst = vec![0u8; rows * row_bytes];
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(16));
    let mut timed = |f: &mut dyn FnMut(&mut [u8])| -> f64 {
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            f(&mut dst);
            best = best.min(t.elapsed().as_secs_f64());
        }
        best
    };
    let copy = timed(&mut |d| d[..src.len()].copy_from_slice(&src));
    let one = timed(&mut |d| repack_q6k_rows(&src, file_row, d, row_bytes, 1));
    let all = timed(&mut |d| repack_q6k_rows(&src, file_row, d, row_bytes, threads));
    let gbs = |s: f64| src.len() as f64 / s / 1e9;
    println!(
        "repack {:.0} MiB of Q6_K rows ({rows} rows of 6656 columns):",
        src.len() as f64 / (1 << 20) as f64
    );
    println!("  plain copy, 1 thread:      {:6.2} GB/s", gbs(copy));
    println!(
        "  repack, 1 thread:          {:6.2} GB/s = {:.2}x the copy",
        gbs(one),
        copy / one
    );
    println!(
        "  repack, {threads:2} threads:        {:6.2} GB/s = {:.2}x the copy",
        gbs(all),
        copy / all
    );
    println!(
        "SUMMARY|repack|{threads} threads|{:.2} GB/s|1 thread {:.2} GB/s, copy {:.2} GB/s",
        gbs(all),
        gbs(one),
        gbs(copy)
    );
    Ok(())
}

pub fn main_impl() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = args.first().cloned().unwrap_or_default();
    if cmd == "synth" || cmd == "repack" {
        let r = if cmd == "synth" {
            synth(&args)
        } else {
            repack(&args)
        };
        return match r {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if !["ops", "e2e", "bench", "trace", "timeline"].contains(&cmd.as_str()) {
        eprintln!(
            "usage: cuda-check synth|repack|ops|e2e|bench|trace|timeline ... (see the source header)"
        );
        return ExitCode::FAILURE;
    }
    let gpu = match open_gpu() {
        Ok(g) => g,
        Err(e @ (CudaError::NoDriver | CudaError::NoNvrtc | CudaError::Unavailable)) => {
            println!("SKIP: {e}");
            return ExitCode::from(2);
        }
        Err(CudaError::Compile) => {
            let log = glimmer_jetson::compile::cache_dir().join("last-compile-error.log");
            eprintln!(
                "error: NVRTC failed:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let run = || -> Result<bool, String> {
        let seed = num(&args, "--seed", 1)? as u64;
        match cmd.as_str() {
            "ops" => ops::run(gpu.clone(), seed),
            "e2e" => {
                let model = PathBuf::from(arg(&args, "--model").ok_or("--model PATH is required")?);
                e2e::run(gpu.clone(), &model, num(&args, "--tokens", 32)?, seed)
            }
            "timeline" => {
                let model = PathBuf::from(arg(&args, "--model").ok_or("--model PATH is required")?);
                let bw = bench::bandwidth(&gpu, num(&args, "--bw-gib", 4)? << 30, 5)?;
                timeline::run(gpu.clone(), &model, num(&args, "--prefill", 512)?, bw)?;
                Ok(true)
            }
            "trace" => {
                let model = PathBuf::from(arg(&args, "--model").ok_or("--model PATH is required")?);
                bench::trace(gpu.clone(), &model, num(&args, "--prefill", 64)?)?;
                Ok(true)
            }
            _ => {
                let model = PathBuf::from(arg(&args, "--model").ok_or("--model PATH is required")?);
                let gib = num(&args, "--bw-gib", 4)?;
                let bw = bench::bandwidth(&gpu, gib << 30, 5)?;
                bench::run(
                    gpu.clone(),
                    &model,
                    num(&args, "--prefill", 512)?,
                    num(&args, "--steps", 128)?,
                    bw,
                    args.iter().any(|a| a == "--quick"),
                )?;
                Ok(true)
            }
        }
    };
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            println!("FAILED: some checks are outside tolerance");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

//! `glimmer-synth`: write a synthetic Muse Glimmer GGUF (real architecture and metadata,
//! seeded random weights) for tests and benchmarks.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use glimmer_boards::synth::{write_synth, Mix, SynthConfig};
use glimmer_core::quant::GgmlType;

/// Write a synthetic Muse Glimmer GGUF with seeded random weights.
///
/// The file follows Glimmer's `glimmer` GGUF convention (see `glimmer_boards::synth`): the
/// real layer pattern (every fourth layer global and NoPE, the others sliding with RoPE),
/// QK-norm, the attention output gate, sandwich norms, the logit softcap, and a byte-level BPE
/// vocabulary with control tokens. The same seed and type always give the same bytes.
///
/// Without `--full` the tiny test model is written (8 layers, dim 256, vocabulary 512, window
/// 16; about 5.6 MB as Q8_0). `--type f32` and `--type q4_k_m` give exactly the test presets
/// `SynthConfig::tiny_f32()` and `SynthConfig::tiny_q4_k_m()`. With `--full` the real shape is written (52 layers, dim 6656,
/// vocabulary 202048; about 17 GB as Q4_K_M), streamed to the file with progress on stderr.
#[derive(Parser)]
#[command(version, about, long_about)]
struct Cli {
    /// Output GGUF path.
    #[arg(long)]
    out: PathBuf,
    /// Write the full-size model instead of the tiny one.
    #[arg(long)]
    full: bool,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Matrix storage: q8_0, q4_0, q4_1, q5_0, q4_k, q5_k, q6_k, q4_k_m (Q4_K with Q6_K for
    /// `output` and some `attn_v`/`ffn_down`), f16, bf16 or f32 [default: q8_0 for the tiny
    /// model, q4_k_m with --full].
    #[arg(long = "type", value_parser = parse_type)]
    ty: Option<(GgmlType, Mix)>,
}

fn parse_type(s: &str) -> Result<(GgmlType, Mix), String> {
    let ty = match s.to_ascii_lowercase().as_str() {
        "q4_k_m" => return Ok((GgmlType::Q4_K, Mix::Q4KM)),
        "q8_0" => GgmlType::Q8_0,
        "q4_0" => GgmlType::Q4_0,
        "q4_1" => GgmlType::Q4_1,
        "q5_0" => GgmlType::Q5_0,
        "q4_k" => GgmlType::Q4_K,
        "q5_k" => GgmlType::Q5_K,
        "q6_k" => GgmlType::Q6_K,
        "f16" => GgmlType::F16,
        "bf16" => GgmlType::BF16,
        "f32" => GgmlType::F32,
        _ => return Err(format!("unknown type {s:?}")),
    };
    Ok((ty, Mix::Uniform))
}

/// Prints `done / total`, speed and ETA to stderr at most twice a second.
struct Meter {
    start: Instant,
    last: Instant,
}

impl Meter {
    fn update(&mut self, done: u64, total: u64) {
        let now = Instant::now();
        if now.duration_since(self.last) < Duration::from_millis(500) && done < total {
            return;
        }
        self.last = now;
        let secs = now.duration_since(self.start).as_secs_f64().max(1e-3);
        let rate = done as f64 / secs;
        let eta = if rate > 0.0 {
            (total - done) as f64 / rate
        } else {
            0.0
        };
        eprint!(
            "\r{:>9.1} / {:.1} MB ({:>3.0}%)  {:>6.1} MB/s  ETA {:>4.0} s ",
            done as f64 / 1e6,
            total as f64 / 1e6,
            100.0 * done as f64 / total.max(1) as f64,
            rate / 1e6,
            eta
        );
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut cfg = if cli.full {
        SynthConfig::full()
    } else {
        SynthConfig::tiny()
    };
    cfg.seed = cli.seed;
    if let Some((ty, mix)) = cli.ty {
        cfg = cfg.with_type(ty, mix);
    }
    let file = match File::create(&cli.out) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {}: {e}", cli.out.display());
            return ExitCode::FAILURE;
        }
    };
    let now = Instant::now();
    let mut meter = Meter {
        start: now,
        last: now,
    };
    let out = BufWriter::with_capacity(8 << 20, file);
    let result = write_synth(&cfg, out, |d, t| meter.update(d, t));
    eprintln!();
    match result {
        Ok(n) => {
            let secs = now.elapsed().as_secs_f64();
            let _ = writeln!(
                std::io::stderr(),
                "wrote {} ({n} bytes) in {secs:.1} s",
                cli.out.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

//! Decode throughput of the GPU backend on one model.
//!
//! ```text
//! cargo run --release -p glimmer-apple --example gpu_bench -- MODEL.gguf \
//!     [--tokens 128] [--prompt 64] [--ctx 2048] [--bandwidth-gbs 4800] [--kv f16|f32] [--no-subgroups] [--no-int-dot]
//!     [--row-per-lane | --no-row-per-lane]
//!     [--profile] [--gpu-times]
//! ```
//! With `--profile`, a further 8 decode steps run with a wait after every backend op, and
//! the time per op (GPU work plus the submit) is printed as a table. With `--gpu-times`
//! (where the adapter has `TIMESTAMP_QUERY`), a further 4 decode steps run with GPU
//! timestamps around every dispatch, and the GPU time per kernel is printed, heaviest first.
//! Prints the adapter, prefill and decode tokens/s, the bytes one decode token reads (weights
//! of every matmul, one embedding row, the KV cache at the mean position) and, given the
//! memory bandwidth in GB/s, the bound it implies and the fraction of it reached. Decoding
//! is greedy with the argmax on the GPU, so only 4 bytes come back per token.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use glimmer_apple::{GpuBackend, GpuContext, GpuKvType, GpuOptions, KvShape};
use glimmer_boards::engine::Loaded;
use glimmer_boards::model_file::ModelFile;
use glimmer_core::exec::{Layout, Limits, LogitRows, Model};
use glimmer_core::kv::KvGeometry;
use glimmer_core::model::Weights;
use glimmer_core::plan::KvType;

struct Args {
    model: PathBuf,
    tokens: usize,
    prompt: usize,
    ctx: usize,
    bandwidth: Option<f64>,
    kv: GpuKvType,
    subgroups: bool,
    int_dot: bool,
    row_per_lane: Option<bool>,
    profile: bool,
    gpu_times: bool,
}

fn parse() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        model: PathBuf::new(),
        tokens: 128,
        prompt: 64,
        ctx: 2048,
        bandwidth: None,
        kv: GpuKvType::F16,
        subgroups: true,
        int_dot: true,
        row_per_lane: None,
        profile: false,
        gpu_times: false,
    };
    let num = |v: Option<String>| -> Result<f64, String> {
        v.ok_or("missing value")?
            .parse::<f64>()
            .map_err(|e| e.to_string())
    };
    while let Some(s) = it.next() {
        match s.as_str() {
            "--tokens" => a.tokens = num(it.next())? as usize,
            "--profile" => a.profile = true,
            "--gpu-times" => a.gpu_times = true,
            "--prompt" => a.prompt = num(it.next())? as usize,
            "--ctx" => a.ctx = num(it.next())? as usize,
            "--bandwidth-gbs" => a.bandwidth = Some(num(it.next())?),
            "--kv" => {
                a.kv = match it.next().as_deref() {
                    Some("f16") => GpuKvType::F16,
                    Some("f32") => GpuKvType::F32,
                    _ => return Err("--kv takes f16 or f32".into()),
                }
            }
            "--no-subgroups" => a.subgroups = false,
            "--no-int-dot" => a.int_dot = false,
            "--row-per-lane" => a.row_per_lane = Some(true),
            "--no-row-per-lane" => a.row_per_lane = Some(false),
            _ if a.model.as_os_str().is_empty() => a.model = PathBuf::from(s),
            _ => return Err(format!("unexpected argument {s}")),
        }
    }
    if a.model.as_os_str().is_empty() {
        return Err(
            "usage: gpu_bench MODEL.gguf [--tokens N] [--prompt N] [--ctx N] \
                    [--bandwidth-gbs GB/s] [--kv f16|f32] [--no-subgroups] [--no-int-dot]
//!     [--row-per-lane | --no-row-per-lane] [--profile] [--gpu-times]"
                .into(),
        );
    }
    if a.prompt == 0 || a.prompt + a.tokens > a.ctx {
        return Err("need 0 < prompt and prompt + tokens <= ctx".into());
    }
    Ok(a)
}

/// Bytes of weights one token reads: every projection, the head, the norms, one embedding row.
fn weight_bytes_per_token(w: &Weights<'_>) -> u64 {
    let mut b = (w.tok_embd.row_bytes() + w.output.data.len() + w.output_norm.data.len()) as u64;
    for l in w.layers.iter() {
        b += l.tensors().map(|t| t.data.len() as u64).sum::<u64>();
    }
    b
}

fn run(a: Args) -> Result<(), String> {
    let file = ModelFile::open(&a.model).map_err(|e| e.to_string())?;
    let loaded = Loaded::new(&file).map_err(|e| e.to_string())?;
    let s = &loaded.spec;
    let ctx = GpuContext::new(GpuOptions {
        subgroups: a.subgroups,
        int_dot: a.int_dot,
        row_per_lane: a.row_per_lane,
    })
    .map_err(|e| e.to_string())?;
    println!(
        "adapter: {} (subgroups: {}, Q4_K int8 dot: {}, one row per lane: {})",
        ctx.describe(),
        ctx.uses_subgroups(),
        ctx.uses_int_dot(),
        ctx.uses_row_per_lane()
    );
    let limits = Limits {
        chunk: a.prompt.min(256),
        logit_rows: 1,
        ctx: a.ctx,
        threads: 1,
    };
    let layout = Layout::new(s, limits).map_err(|e| format!("{e:?}"))?;
    let geo = KvGeometry::new(s, a.ctx, limits.chunk, KvType::F16).map_err(|e| e.to_string())?;
    let shape = KvShape::from_geometry(&geo, a.kv);
    let mut b = GpuBackend::new(ctx, &layout, shape.clone(), s.n_head, s.head_dim_v)
        .map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    b.upload_model(&loaded.weights).map_err(|e| e.to_string())?;
    println!(
        "model: {} ({} layers), weights on GPU {:.1} MB, upload {:.2} s",
        a.model.display(),
        s.n_layer,
        b.weight_bytes() as f64 / 1e6,
        t0.elapsed().as_secs_f64()
    );
    let m = Model {
        spec: s,
        weights: &loaded.weights,
        layout: &layout,
    };
    let nv = s.n_vocab;
    let prompt: Vec<u32> = (0..a.prompt)
        .map(|i| (1000 + 7 * i as u32) % nv as u32)
        .collect();
    let mut next = [0u32; 1];
    let logits = layout.logits.prefix(nv);
    // Warm-up: compiles every pipeline.
    m.forward(&mut b, &prompt[..1], 0, LogitRows::Last)
        .map_err(|e| format!("{e:?}"))?;
    b.argmax(logits, nv, &mut next).map_err(|e| e.to_string())?;

    let t = Instant::now();
    let mut pos = 0u32;
    for c in prompt.chunks(limits.chunk) {
        m.forward(&mut b, c, pos, LogitRows::Last)
            .map_err(|e| format!("{e:?}"))?;
        pos += c.len() as u32;
    }
    b.argmax(logits, nv, &mut next).map_err(|e| e.to_string())?;
    let prefill = t.elapsed().as_secs_f64();

    let t = Instant::now();
    // Recording a step is host work; the argmax's readback submits it and waits for the GPU.
    let mut record = 0.0;
    for _ in 0..a.tokens {
        let tr = Instant::now();
        m.forward(&mut b, &next, pos, LogitRows::Last)
            .map_err(|e| format!("{e:?}"))?;
        record += tr.elapsed().as_secs_f64();
        b.argmax(logits, nv, &mut next).map_err(|e| e.to_string())?;
        pos += 1;
    }
    let decode = t.elapsed().as_secs_f64();
    let tps = a.tokens as f64 / decode;

    if a.gpu_times && !b.gpu_timing_supported() {
        println!("--gpu-times: the adapter has no TIMESTAMP_QUERY; skipped");
    } else if a.gpu_times {
        let steps = 4;
        b.start_gpu_timing(200_000).map_err(|e| e.to_string())?;
        let mut wall = 0.0;
        let mut times = Vec::new();
        // One step per read-back: a query set holds at most 2048 dispatches.
        for _ in 0..steps {
            let t = Instant::now();
            m.forward(&mut b, &next, pos, LogitRows::Last)
                .map_err(|e| format!("{e:?}"))?;
            b.argmax(logits, nv, &mut next).map_err(|e| e.to_string())?;
            wall += t.elapsed().as_secs_f64() / steps as f64;
            pos += 1;
            times.extend(b.take_gpu_times().map_err(|e| e.to_string())?);
        }
        b.stop_gpu_timing();
        let mut by: Vec<(String, f64, usize)> = Vec::new();
        for (k, dt) in times {
            match by.iter_mut().find(|e| e.0 == k) {
                Some(e) => {
                    e.1 += dt;
                    e.2 += 1;
                }
                None => by.push((k, dt, 1)),
            }
        }
        by.sort_by(|x, y| y.1.total_cmp(&x.1));
        let gpu: f64 = by.iter().map(|e| e.1).sum::<f64>() / steps as f64;
        println!(
            "GPU time per decode step, {steps} steps: {:.2} ms in kernels of {:.2} ms wall",
            gpu * 1e3,
            wall * 1e3
        );
        println!(
            "{:<28} {:>10} {:>12} {:>10} {:>7}",
            "kernel/entry", "calls/step", "µs/call", "ms/step", "share"
        );
        for (k, t, n) in &by {
            println!(
                "{:<28} {:>10.1} {:>12.1} {:>10.3} {:>6.1}%",
                k,
                *n as f64 / steps as f64,
                t / *n as f64 * 1e6,
                t / steps as f64 * 1e3,
                100.0 * t / steps as f64 / gpu.max(1e-12)
            );
        }
    }

    if a.profile {
        let mut times = glimmer_boards::profile::OpTimes::default();
        let steps = 8;
        for _ in 0..steps {
            {
                let mut pb =
                    glimmer_boards::profile::Profiled::with_fence(&mut b, &mut times, |g| {
                        // A failed wait shows up as the next op's error.
                        let _ = g.finish();
                    });
                m.forward(&mut pb, &next, pos, LogitRows::Last)
                    .map_err(|e| format!("{e:?}"))?;
            }
            b.argmax(logits, nv, &mut next).map_err(|e| e.to_string())?;
            pos += 1;
        }
        println!("decode ops, {steps} steps, each op waited for:");
        print!("{}", times.table());
    }

    let kv_row = if a.kv == GpuKvType::F16 { 2 } else { 4 } * (shape.k_dim + shape.v_dim) as u64;
    let mean_pos = (a.prompt + a.tokens / 2) as u64;
    let kv_bytes: u64 = shape
        .caps
        .iter()
        .map(|&c| (c as u64).min(mean_pos) * kv_row)
        .sum();
    let per_tok = weight_bytes_per_token(&loaded.weights) + kv_bytes;
    println!(
        "prefill: {} tokens in {:.3} s = {:.1} tok/s",
        a.prompt,
        prefill,
        a.prompt as f64 / prefill
    );
    println!(
        "decode: {} tokens in {:.3} s = {:.1} tok/s",
        a.tokens, decode, tps
    );
    println!(
        "  of which recording on the host {:.2} ms a token, submit + GPU + readback {:.2} ms",
        1e3 * record / a.tokens as f64,
        1e3 * (decode - record) / a.tokens as f64
    );
    println!(
        "bytes/token: {:.2} MB (weights {:.2} MB, KV {:.2} MB at position {mean_pos}); achieved {:.1} GB/s",
        per_tok as f64 / 1e6,
        (per_tok - kv_bytes) as f64 / 1e6,
        kv_bytes as f64 / 1e6,
        per_tok as f64 * tps / 1e9
    );
    if let Some(bw) = a.bandwidth {
        let bound = bw * 1e9 / per_tok as f64;
        println!(
            "bandwidth {bw} GB/s: bound {bound:.1} tok/s, reached {:.1}%",
            100.0 * tps / bound
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match parse().and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpu_bench: {e}");
            ExitCode::FAILURE
        }
    }
}

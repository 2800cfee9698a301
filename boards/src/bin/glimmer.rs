//! `glimmer`: run a GGUF model on the CPU from the command line.
//!
//! `glimmer generate --prompt "…"` tokenizes the prompt, prefills it in chunks, then decodes
//! token by token, streaming text to stdout and a speed summary to stderr. `glimmer bench`
//! measures prefill and decode speed against the machine's memory bandwidth; `glimmer plan`
//! checks a model's memory plan against a board.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use glimmer_boards::engine::{build_engine, BackendKind, Loaded};
use glimmer_boards::model_file::{default_model_path, ModelFile};
use glimmer_boards::pool::Pool;
use glimmer_boards::Error;
use glimmer_core::exec::{Layout, Limits, LogitRows};
use glimmer_core::model::Arch;
use glimmer_core::sample::{Sampler, SamplerConfig};

/// Glimmer: on-device inference for GGUF models.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Generate text from a prompt (on the CPU backend unless --backend says otherwise).
    ///
    /// The prompt is tokenized with the model's own vocabulary (special tokens such as
    /// `<|im_start|>` are recognised), prefilled in chunks, then decoded one token at a time until
    /// `-n` tokens or an end-of-generation token. Text streams to stdout; a summary with tokens/s
    /// goes to stderr.
    Generate {
        /// GGUF model file [default: $GLIMMER_MODELS/smollm2-135m-instruct-q4_1.gguf, or
        /// ~/.cache/glimmer/models/… when GLIMMER_MODELS is unset].
        #[arg(long)]
        model: Option<PathBuf>,
        /// Prompt text.
        #[arg(long)]
        prompt: String,
        /// Wrap the prompt as one user turn in the model's chat template (ChatML or Gemma).
        #[arg(long)]
        chat: bool,
        /// Most tokens to generate.
        #[arg(short = 'n', long, default_value_t = 64)]
        n_predict: usize,
        /// Sampling temperature; 0 is greedy.
        #[arg(long = "temp", default_value_t = 0.0)]
        temperature: f32,
        /// Top-k cut-off (0: none).
        #[arg(long, default_value_t = 40)]
        top_k: usize,
        /// Top-p (nucleus) cut-off.
        #[arg(long, default_value_t = 0.95)]
        top_p: f32,
        /// RNG seed for sampling.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Context length to allocate.
        #[arg(long, default_value_t = 2048)]
        ctx: usize,
        /// Keep generating past end-of-generation tokens.
        #[arg(long)]
        ignore_eos: bool,
        /// Worker threads, the calling thread included [default: available cores].
        #[arg(long)]
        threads: Option<usize>,
        /// Backend: cpu, wgpu (Metal on Apple Silicon, Vulkan elsewhere) or cuda (NVIDIA
        /// driver and libnvrtc needed at run time).
        #[arg(long, default_value = "cpu")]
        backend: BackendKind,
    },
    /// Measure prefill and decode speed, memory bandwidth, and decode against its limit.
    ///
    /// Prefills a prompt of `--prompt-tokens` ids in one call (after one untimed warm-up), then
    /// decodes `--gen` tokens greedily, timing each phase. Then streams a buffer much larger than
    /// the last-level cache on the same number of threads to measure read bandwidth, counts the
    /// bytes one decoded token reads (weights + KV), and prints decode as a fraction of
    /// bandwidth ÷ bytes per token. The last line is the same as JSON (`BENCH_JSON {...}`).
    Bench(BenchArgs),
    /// Plan the memory a model takes on a board, and check it against the board's budget.
    ///
    /// Reads only the GGUF header and tensor table. Prints weights, KV cache (global layers keep
    /// `--ctx` positions, sliding layers a ring of window + chunk; pages of 64 positions), the
    /// packed activation arena, quantization scratch and the total, then each budget line of the
    /// board with OK or OVER. Exits with failure when a budget is exceeded.
    Plan(PlanArgs),
}

/// Arguments of `glimmer plan`.
#[derive(clap::Args)]
struct PlanArgs {
    /// GGUF model file [default: the default model, as for `generate`].
    #[arg(long)]
    model: Option<PathBuf>,
    /// Board profile: sim, jetson-agx-orin-64g, jetson-orin-nano-8g, apple-m3-max-128g, linux-x86.
    #[arg(long, default_value = "sim")]
    board: String,
    /// Context length of each session.
    #[arg(long, default_value_t = 4096)]
    ctx: usize,
    /// Sessions whose KV caches are resident at once.
    #[arg(long, default_value_t = 1)]
    sessions: usize,
    /// Most tokens per forward call (prefill chunk).
    #[arg(long, default_value_t = 64)]
    chunk: usize,
    /// KV cache storage: f16 or q8_0.
    #[arg(long, default_value = "f16")]
    kv: String,
    /// Speculative block verified in one call (0: none); widens the chunk to this many rows.
    #[arg(long, default_value_t = 0)]
    spec_block: usize,
    /// Worker threads (the attention scratch in the plan is sized for this many tasks).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Also build the engine from the plan, run every session (a prompt of
    /// `--measure-prompt` tokens, then `--measure-decode` greedy tokens) and compare the
    /// process's resident memory with the plan. Linux only (reads /proc/self/status).
    #[arg(long)]
    measure: bool,
    /// Prompt tokens per session for `--measure`.
    #[arg(long, default_value_t = 256)]
    measure_prompt: usize,
    /// Decoded tokens per session for `--measure`.
    #[arg(long, default_value_t = 64)]
    measure_decode: usize,
}

/// Arguments of `glimmer bench`.
#[derive(clap::Args)]
struct BenchArgs {
    /// GGUF model file [default: the default model, as for `generate`].
    #[arg(long)]
    model: Option<PathBuf>,
    /// Worker threads, the calling thread included [default: available cores].
    #[arg(long)]
    threads: Option<usize>,
    /// Prompt length in tokens.
    #[arg(long, default_value_t = 512)]
    prompt_tokens: usize,
    /// Tokens to decode.
    #[arg(long, default_value_t = 128)]
    gen: usize,
    /// Prefill chunk (rows per forward call).
    #[arg(long, default_value_t = 512)]
    chunk: usize,
    /// Text the prompt is made of (tokenized with BOS, repeated, cut to --prompt-tokens).
    #[arg(
        long,
        default_value = "The history of the city begins with a small fishing village on the river. Over the centuries, traders, farmers and craftsmen settled there, built bridges and markets, and wrote down what they saw."
    )]
    text: String,
    /// Read the prompt ids from this file (JSON array) instead of tokenizing --text.
    #[arg(long)]
    ids: Option<PathBuf>,
    /// Write the prompt ids used to this file (JSON array), for another implementation.
    #[arg(long)]
    save_ids: Option<PathBuf>,
    /// Bytes streamed by the bandwidth test [default: 4 × last-level cache, at least 1 GiB].
    #[arg(long)]
    stream_bytes: Option<usize>,
    /// Also time every backend op (RMSNorm, each matmul kind, RoPE, KV store, attention,
    /// element-wise) and print a table per phase: where a token's time goes.
    #[arg(long)]
    profile: bool,
}

/// `glimmer bench`.
#[allow(clippy::result_large_err)]
fn bench(a: BenchArgs) -> Result<(), Error> {
    use glimmer_boards::bench;
    let path = a.model.unwrap_or_else(default_model_path);
    let file = ModelFile::open(&path)?;
    let loaded = Loaded::new(&file)?;
    let ids = match &a.ids {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).map_err(|e| Error::Io(p.display().to_string(), e))?;
            parse_ids(&text).ok_or(Error::TooLarge("--ids file (not a JSON array of ids)"))?
        }
        None => bench::prompt_ids(&loaded, &a.text, a.prompt_tokens)?,
    };
    if let Some(p) = &a.save_ids {
        let body: Vec<String> = ids.iter().map(u32::to_string).collect();
        std::fs::write(p, format!("[{}]\n", body.join(",")))
            .map_err(|e| Error::Io(p.display().to_string(), e))?;
    }
    let threads = a
        .threads
        .unwrap_or_else(glimmer_boards::pool::Pool::default_threads);
    let cfg = bench::BenchConfig {
        prompt: ids,
        gen: a.gen,
        threads,
        chunk: a.chunk,
        stream_bytes: a.stream_bytes.unwrap_or_else(bench::default_stream_bytes),
        profile: a.profile,
    };
    let r = bench::run(&loaded, &cfg)?;
    for (phase, ops, per) in [
        ("prefill", &r.prefill_ops, 1),
        ("decode", &r.decode_ops, r.gen_tokens.max(1)),
    ] {
        if let Some(ops) = ops {
            println!(
                "{phase} ops ({:.3} ms in ops per forward call):\n{}",
                ops.total().as_secs_f64() * 1e3 / per as f64,
                ops.table()
            );
        }
    }
    let gb = |b: f64| b / 1e9;
    let mib = |b: f64| b / (1u64 << 20) as f64;
    println!(
        "model {} ({}), {} threads, kernels {:?}",
        path.display(),
        loaded.spec.arch.name(),
        threads,
        glimmer_core::quant::Kernels::select(glimmer_boards::cpu_features::detect()).dot_isa(
            loaded
                .weights
                .layers
                .first()
                .map_or(loaded.weights.output.ty, |l| l.wq.ty)
        )
    );
    println!(
        "prefill: {} tokens in {:.3} s = {:.1} tok/s",
        r.prompt_tokens,
        r.prefill_s,
        r.prefill_tps()
    );
    println!(
        "decode:  {} tokens in {:.3} s = {:.1} tok/s ({:.2} ms/token)",
        r.gen_tokens,
        r.decode_s,
        r.decode_tps(),
        1e3 / r.decode_tps().max(1e-9)
    );
    println!(
        "memory:  streaming read {:.2} GB/s over {:.0} MiB",
        gb(r.bandwidth),
        mib(cfg.stream_bytes as f64)
    );
    println!(
        "bytes per decoded token: {:.2} MiB ({:.2} MiB weights + {:.2} MiB KV)",
        mib(r.bytes_per_token()),
        mib(r.weight_bytes),
        mib(r.kv_bytes)
    );
    println!(
        "decode limit {:.1} tok/s; decode at {:.0} % of it",
        r.limit_tps(),
        100.0 * r.decode_tps() / r.limit_tps().max(1e-9)
    );
    println!(
        "BENCH_JSON {{\"prefill_tokens\":{},\"prefill_s\":{},\"prefill_tps\":{},\"gen_tokens\":{},\"decode_s\":{},\"decode_tps\":{},\"bandwidth_gbs\":{},\"bytes_per_token\":{},\"weight_bytes\":{},\"kv_bytes\":{},\"limit_tps\":{},\"threads\":{},\"tokens\":{:?}}}",
        r.prompt_tokens,
        r.prefill_s,
        r.prefill_tps(),
        r.gen_tokens,
        r.decode_s,
        r.decode_tps(),
        gb(r.bandwidth),
        r.bytes_per_token(),
        r.weight_bytes,
        r.kv_bytes,
        r.limit_tps(),
        threads,
        r.tokens
    );
    Ok(())
}

/// A JSON array of non-negative integers, as `--save-ids` writes it.
fn parse_ids(text: &str) -> Option<Vec<u32>> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().ok())
        .collect()
}

/// `glimmer plan`: prints the plan; fails when it does not fit the board.
fn plan(a: PlanArgs) -> ExitCode {
    use glimmer_boards::{plan_report, profiles};
    use glimmer_core::model::ModelSpec;
    use glimmer_core::plan::{KvType, Plan, PlanLimits};
    let fail = |msg: String| {
        eprintln!("glimmer: error: {msg}");
        ExitCode::FAILURE
    };
    let Some(board) = profiles::profile(&a.board) else {
        let names: Vec<_> = profiles::names().collect();
        return fail(format!(
            "unknown board {:?} (known: {})",
            a.board,
            names.join(", ")
        ));
    };
    let Some(kv_type) = KvType::from_name(&a.kv) else {
        return fail(format!("unknown KV type {:?} (f16 or q8_0)", a.kv));
    };
    let path = a.model.unwrap_or_else(default_model_path);
    let file = match ModelFile::open(&path) {
        Ok(f) => f,
        Err(e) => return fail(e.to_string()),
    };
    let (spec, weights) = match file.gguf() {
        Ok(g) => match ModelSpec::from_gguf(&g) {
            Ok(s) => (s, plan_report::weights_bytes(&g)),
            Err(e) => return fail(Error::Model(e).to_string()),
        },
        Err(e) => return fail(e.to_string()),
    };
    let limits = PlanLimits {
        ctx: a.ctx,
        sessions: a.sessions,
        chunk: a.chunk,
        logit_rows: 1,
        threads: a.threads,
        spec_block: a.spec_block,
        kv_type,
    };
    let plan = match Plan::new(&spec, weights, limits) {
        Ok(p) => p,
        Err(e) => return fail(e.to_string()),
    };
    println!(
        "plan for {} ({}, {} layers) on {}: ctx {}, {} session(s), KV {}",
        path.display(),
        spec.arch.name(),
        spec.n_layer,
        board.name,
        a.ctx,
        a.sessions,
        kv_type.name()
    );
    print!("{}", plan_report::render(&plan, board));
    if let Err(e) = plan.check(&board.budget) {
        return fail(e.to_string());
    }
    if a.measure {
        let mut progress = |msg: &str| eprintln!("glimmer: measuring: {msg}");
        let m = glimmer_boards::plan_measure::measure(
            &file,
            &plan,
            a.measure_prompt,
            a.measure_decode,
            &mut progress,
        );
        match m {
            Ok(m) => print!("{}", glimmer_boards::plan_measure::render(&m)),
            Err(e) => return fail(e.to_string()),
        }
    }
    ExitCode::SUCCESS
}

fn chat_wrap(arch: Arch, prompt: &str) -> String {
    match arch {
        Arch::Llama => format!("<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"),
        Arch::Gemma3 => {
            format!("<start_of_turn>user\n{prompt}<end_of_turn>\n<start_of_turn>model\n")
        }
        Arch::Glimmer => format!("<|start|>user<|message|>{prompt}<|eot|><|start|>assistant"),
    }
}

// `Error` carries the core's by-value error names (no allocation in core); it is large but
// only ever travels on the cold path out of `main`.
#[allow(clippy::too_many_arguments, clippy::result_large_err)]
fn generate(
    model: Option<PathBuf>,
    prompt: &str,
    chat: bool,
    n_predict: usize,
    cfg: SamplerConfig,
    ctx: usize,
    ignore_eos: bool,
    threads: Option<usize>,
    backend: BackendKind,
) -> Result<(), Error> {
    let path = model.unwrap_or_else(default_model_path);
    let t_load = Instant::now();
    let file = ModelFile::open(&path)?;
    let loaded = Loaded::new(&file)?;
    let spec = loaded.spec;
    eprintln!(
        "glimmer: loaded {} ({}; {} layers, dim {}, vocab {}) in {:.2} s",
        path.display(),
        spec.arch.name(),
        spec.n_layer,
        spec.n_embd,
        spec.n_vocab,
        t_load.elapsed().as_secs_f64()
    );
    let text = if chat {
        chat_wrap(spec.arch, prompt)
    } else {
        prompt.to_string()
    };
    let tok = &loaded.tokenizer;
    let tokens = tok.encode(&text, true, true)?;
    if tokens.is_empty() || tokens.len() + n_predict > ctx {
        return Err(Error::PromptTooLong {
            prompt: tokens.len() + n_predict,
            ctx,
        });
    }
    let limits = Limits {
        chunk: 64,
        logit_rows: 1,
        ctx,
        threads: threads.unwrap_or_else(Pool::default_threads).max(1),
    };
    let layout = Layout::new(&spec, limits).map_err(Error::Layout)?;
    let mut engine = build_engine(backend, &loaded, &layout, 1)?;
    eprintln!("glimmer: backend {}", engine.describe());
    let mut logits = vec![0.0f32; spec.n_vocab];
    let mut scratch = vec![0u32; spec.n_vocab];
    let mut sampler = Sampler::new(cfg);

    let t_prefill = Instant::now();
    engine.forward_slot(0, &tokens, LogitRows::Last, &mut logits)?;
    let prefill_s = t_prefill.elapsed().as_secs_f64();

    let t_decode = Instant::now();
    let mut out = std::io::stdout().lock();
    let mut pending: Vec<u8> = Vec::new();
    let mut generated = 0usize;
    for _ in 0..n_predict {
        let next = sampler
            .sample(&logits, &mut scratch)
            .map_err(Error::Sample)?;
        generated += 1;
        if tok.is_eog(next) && !ignore_eos {
            break;
        }
        pending.extend_from_slice(&tok.decode_token(next)?);
        // Print only whole UTF-8 characters; keep a split one for the next token.
        let valid = match std::str::from_utf8(&pending) {
            Ok(_) => pending.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => pending.len(),
        };
        out.write_all(&pending[..valid]).ok();
        out.flush().ok();
        pending.drain(..valid);
        if generated == n_predict || engine.slot_pos(0) + 1 > engine.ctx() {
            break;
        }
        engine.forward_slot(0, &[next], LogitRows::Last, &mut logits)?;
    }
    out.write_all(&pending).ok();
    writeln!(out).ok();
    let decode_s = t_decode.elapsed().as_secs_f64();
    eprintln!(
        "glimmer: prompt {} tokens in {:.2} s ({:.1} tok/s); generated {} tokens in {:.2} s ({:.1} tok/s)",
        tokens.len(),
        prefill_s,
        tokens.len() as f64 / prefill_s.max(1e-9),
        generated,
        decode_s,
        generated as f64 / decode_s.max(1e-9),
    );
    Ok(())
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Generate {
            model,
            prompt,
            chat,
            n_predict,
            temperature,
            top_k,
            top_p,
            seed,
            ctx,
            ignore_eos,
            threads,
            backend,
        } => generate(
            model,
            &prompt,
            chat,
            n_predict,
            SamplerConfig {
                temperature,
                top_k,
                top_p,
                seed,
            },
            ctx,
            ignore_eos,
            threads,
            backend,
        ),
        Cmd::Bench(args) => bench(args),
        Cmd::Plan(args) => return plan(args),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("glimmer: error: {e}");
            ExitCode::FAILURE
        }
    }
}

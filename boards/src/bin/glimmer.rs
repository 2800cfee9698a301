//! `glimmer`: run a GGUF model on the CPU from the command line.
//!
//! `glimmer generate --prompt "…"` tokenizes the prompt, prefills it in chunks, then decodes
//! token by token, streaming text to stdout and a speed summary to stderr.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use glimmer_boards::engine::{Engine, Loaded};
use glimmer_boards::model_file::{default_model_path, ModelFile};
use glimmer_boards::Error;
use glimmer_core::exec::{Limits, LogitRows};
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
    /// Generate text from a prompt on the CPU backend.
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
    },
}

fn chat_wrap(arch: Arch, prompt: &str) -> String {
    match arch {
        Arch::Llama => format!("<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"),
        Arch::Gemma3 => {
            format!("<start_of_turn>user\n{prompt}<end_of_turn>\n<start_of_turn>model\n")
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn generate(
    model: Option<PathBuf>,
    prompt: &str,
    chat: bool,
    n_predict: usize,
    cfg: SamplerConfig,
    ctx: usize,
    ignore_eos: bool,
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
        threads: 1,
    };
    let mut engine = Engine::new(&loaded, limits)?;
    let mut logits = vec![0.0f32; spec.n_vocab];
    let mut scratch = vec![0u32; spec.n_vocab];
    let mut sampler = Sampler::new(cfg);

    let t_prefill = Instant::now();
    engine.forward(&tokens, LogitRows::Last, &mut logits)?;
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
        if generated == n_predict || engine.pos() + 1 > engine.ctx() {
            break;
        }
        engine.forward(&[next], LogitRows::Last, &mut logits)?;
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
        ),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("glimmer: error: {e}");
            ExitCode::FAILURE
        }
    }
}

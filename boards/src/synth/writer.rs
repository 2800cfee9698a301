//! Declaring and streaming a synthetic model: metadata, vocabulary and lazy tensors.

use std::io::{self, Write};

use glimmer_core::quant::GgmlType;

use super::tensors::{mix, Fill, RowDamp, TensorGen};
use super::{vocab, SynthConfig, ARCH, GLOBAL_INTERVAL, LOGIT_SCALE, NORM_EPS, POST_NORM_EPS};
use super::{ROPE_THETA, SOFTCAP};
use crate::gguf_writer::GgufWriter;
use crate::Error;

/// Standard deviation of `output` times √dim (see the module docs).
const OUTPUT_GAIN: f32 = 24.0;
/// Standard deviation of `token_embd` (see the module docs).
const EMBD_STD: f32 = 0.05;
/// Standard deviation of norm gains around 1.
const GAIN_NOISE: f32 = 0.1;

/// The per-layer tensors: name, row length and row count (1 for a norm vector).
fn layer_tensors(cfg: &SynthConfig) -> [(&'static str, usize, usize); 12] {
    let (dim, ff) = (cfg.dim, cfg.n_ff);
    let (q_dim, kv_dim) = (cfg.n_head * cfg.head_dim, cfg.n_head_kv * cfg.head_dim);
    [
        ("attn_norm", dim, 1),
        ("attn_q", dim, q_dim),
        ("attn_k", dim, kv_dim),
        ("attn_v", dim, kv_dim),
        ("attn_gate", dim, q_dim),
        ("attn_output", q_dim, dim),
        ("post_attention_norm", dim, 1),
        ("ffn_norm", dim, 1),
        ("ffn_gate", dim, ff),
        ("ffn_up", dim, ff),
        ("ffn_down", ff, dim),
        ("post_ffw_norm", dim, 1),
    ]
}

/// The values of matrix `name` (see the module docs).
fn matrix_fill(cfg: &SynthConfig, name: &str, fan_in: usize) -> Fill {
    let hd = cfg.head_dim;
    let half = |lo: usize| RowDamp {
        period: hd,
        lo,
        hi: lo + hd / 2,
        factor: cfg.qk_overlap,
    };
    let std = match name {
        "token_embd" => EMBD_STD,
        "output" => OUTPUT_GAIN / (cfg.dim as f32).sqrt(),
        _ => 1.0 / (fan_in as f32).sqrt(),
    };
    let damp = match name {
        "attn_q" => half(hd / 2),
        "attn_k" => half(0),
        _ => RowDamp::NONE,
    };
    Fill::Normal { std, damp }
}

/// Adds one lazily generated tensor: `n_rows` rows of `ne0` (a vector when `n_rows` is 1).
fn add(
    w: &mut GgufWriter,
    cfg: &SynthConfig,
    name: String,
    ty: GgmlType,
    (ne0, n_rows): (usize, usize),
    fill: Fill,
) -> Result<(), Error> {
    let gen = TensorGen {
        ty,
        ne0,
        n_rows,
        fill,
        seed: mix(cfg.seed, w.n_tensors() as u64),
    };
    let dims: Vec<u64> = if n_rows == 1 {
        vec![ne0 as u64]
    } else {
        vec![ne0 as u64, n_rows as u64]
    };
    w.tensor_with(name, ty, &dims, move |out| gen.write(out))?;
    Ok(())
}

/// Declares the file: metadata, vocabulary and every tensor as a lazy source.
pub fn synth_writer(cfg: &SynthConfig) -> Result<GgufWriter, Error> {
    cfg.check()?;
    let mut w = GgufWriter::new();
    let k = |s: &str| format!("{ARCH}.{s}");
    let u = |v: usize| v as u32; // checked to fit by `check`
    w.kv_str("general.architecture", ARCH)
        .kv_str("general.name", &cfg.name)
        .kv_u32(k("block_count"), u(cfg.n_layer))
        .kv_u32(k("context_length"), u(cfg.ctx))
        .kv_u32(k("embedding_length"), u(cfg.dim))
        .kv_u32(k("feed_forward_length"), u(cfg.n_ff))
        .kv_u32(k("attention.head_count"), u(cfg.n_head))
        .kv_u32(k("attention.head_count_kv"), u(cfg.n_head_kv))
        .kv_u32(k("attention.key_length"), u(cfg.head_dim))
        .kv_u32(k("attention.value_length"), u(cfg.head_dim))
        .kv_f32(k("rope.freq_base"), ROPE_THETA)
        .kv_u32(k("attention.sliding_window"), u(cfg.window))
        .kv_f32(k("attention.layer_norm_rms_epsilon"), NORM_EPS)
        .kv_f32(k("attention.post_norm_rms_epsilon"), POST_NORM_EPS)
        .kv_f32(k("attention.scale"), cfg.attention_scale())
        .kv_u32(k("attention.global_interval"), GLOBAL_INTERVAL)
        .kv_f32(k("final_logit_softcapping"), SOFTCAP)
        .kv_f32(k("logit_scale"), LOGIT_SCALE as f32);

    let v = vocab::synth_vocab(cfg.vocab, cfg.n_special, cfg.seed);
    let tokens: Vec<&str> = v.tokens.iter().map(String::as_str).collect();
    let merges: Vec<&str> = v.merges.iter().map(String::as_str).collect();
    w.kv_str("tokenizer.ggml.model", "gpt2")
        .kv_str("tokenizer.ggml.pre", "smollm")
        .kv_array_str("tokenizer.ggml.tokens", &tokens)
        .kv_array_i32("tokenizer.ggml.token_type", &v.types)
        .kv_array_str("tokenizer.ggml.merges", &merges)
        .kv_u32("tokenizer.ggml.bos_token_id", v.bos)
        .kv_u32("tokenizer.ggml.eos_token_id", v.eos)
        .kv_u32("tokenizer.ggml.eot_token_id", v.eot)
        .kv_u32("tokenizer.ggml.eom_token_id", v.eom);

    let (dim, vocab) = (cfg.dim, cfg.vocab);
    let gain = Fill::Gain { noise: GAIN_NOISE };
    let embd_ty = cfg.matrix_type("token_embd", None);
    let embd = matrix_fill(cfg, "token_embd", dim);
    add(
        &mut w,
        cfg,
        "token_embd.weight".into(),
        embd_ty,
        (dim, vocab),
        embd,
    )?;
    add(
        &mut w,
        cfg,
        "output_norm.weight".into(),
        GgmlType::F32,
        (dim, 1),
        gain,
    )?;
    let out_ty = cfg.matrix_type("output", None);
    let out = matrix_fill(cfg, "output", dim);
    add(
        &mut w,
        cfg,
        "output.weight".into(),
        out_ty,
        (dim, vocab),
        out,
    )?;
    for i in 0..cfg.n_layer {
        for (name, ne0, n_rows) in layer_tensors(cfg) {
            let full = format!("blk.{i}.{name}.weight");
            if n_rows == 1 {
                add(&mut w, cfg, full, GgmlType::F32, (ne0, 1), gain)?;
            } else {
                let ty = cfg.matrix_type(name, Some(i));
                add(
                    &mut w,
                    cfg,
                    full,
                    ty,
                    (ne0, n_rows),
                    matrix_fill(cfg, name, ne0),
                )?;
            }
        }
    }
    Ok(w)
}

/// The size in bytes of the file [`write_synth`] would write, computed without writing.
pub fn synth_file_len(cfg: &SynthConfig) -> Result<u64, Error> {
    Ok(synth_writer(cfg)?.file_len())
}

/// Streams the synthetic model `cfg` into `out`; returns the bytes written.
///
/// `progress(done, total)` is called after every write to `out` with the bytes written so far
/// and the file size. `out` should be buffered (tensor bytes arrive in chunks of up to a few
/// MiB, the header in small pieces).
pub fn write_synth(
    cfg: &SynthConfig,
    out: impl Write,
    progress: impl FnMut(u64, u64),
) -> Result<u64, Error> {
    let mut w = synth_writer(cfg)?;
    let total = w.file_len();
    let mut out = Progress {
        inner: out,
        done: 0,
        total,
        progress,
    };
    Ok(w.write_to(&mut out)?)
}

/// Reports bytes written.
struct Progress<W, F> {
    inner: W,
    done: u64,
    total: u64,
    progress: F,
}

impl<W: Write, F: FnMut(u64, u64)> Write for Progress<W, F> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.done += n as u64;
        (self.progress)(self.done, self.total);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

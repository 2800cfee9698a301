//! Synthetic Muse Glimmer GGUF files: the real architecture and metadata convention with
//! seeded random weights.
//!
//! [`SynthConfig`] describes the shape and storage types; [`write_synth`] streams the file
//! through [`GgufWriter::tensor_with`], generating and quantizing each tensor chunk by chunk,
//! so even [`SynthConfig::full`] (about 17 GB) never sits in memory.
//!
//! # The `glimmer` GGUF convention
//! `general.architecture = "glimmer"`, and under the `glimmer.` prefix: `block_count`,
//! `context_length`, `embedding_length`, `feed_forward_length`, `attention.head_count`,
//! `attention.head_count_kv`, `attention.key_length` and `attention.value_length` (head_dim),
//! `rope.freq_base` (5e5), `attention.sliding_window`, `attention.layer_norm_rms_epsilon`
//! (1e-5: pre-norms, QK-norm, embedding norm, output norm), `attention.post_norm_rms_epsilon`
//! (1e-8: the two post-norms), `attention.scale` (43.7840518911 / √128 / √head_dim),
//! `attention.global_interval` (4: layer `i` is global and NoPE iff `i % 4 == 3`),
//! `final_logit_softcapping` (20) and `logit_scale` (0.19611613513; logits =
//! cap · tanh(z · scale / cap)). The tokenizer is byte-level BPE (`gpt2`, pre `smollm`).
//!
//! Tensors (dims `[ne0 = in, ne1 = out]`): `token_embd`, `output_norm` (f32), `output`
//! (untied), and per layer `blk.N.` `attn_norm`, `attn_q`, `attn_k`, `attn_v`, `attn_gate`,
//! `attn_output`, `post_attention_norm`, `ffn_norm`, `ffn_gate`, `ffn_up`, `ffn_down`,
//! `post_ffw_norm`. Norm weights are absolute gains (1 + small noise), stored as f32. There
//! are no QK-norm tensors: QK-norm is scaleless.
//!
//! # Values
//! Matrices are N(0, 1/fan_in) (fan_in = ne0), so every projection keeps activations O(1);
//! `token_embd` is N(0, 1) (it is normalized anyway); `output` is N(0, 16²/dim), so the
//! pre-cap logits `z · logit_scale` have a standard deviation of about 3 and the softcap bends
//! the largest ones. Norm gains are 1 + N(0, 0.1²).

mod tensors;
mod vocab;

use std::io::{self, Write};

use glimmer_core::quant::GgmlType;

use crate::gguf_writer::GgufWriter;
use crate::Error;
use tensors::{mix, Fill, TensorGen};

/// Architecture string of the convention.
pub const ARCH: &str = "glimmer";
/// `glimmer.attention.global_interval`: every fourth layer (`i % 4 == 3`) is global and NoPE.
pub const GLOBAL_INTERVAL: u32 = 4;
/// `glimmer.rope.freq_base`.
pub const ROPE_THETA: f32 = 500_000.0;
/// `glimmer.attention.layer_norm_rms_epsilon`.
pub const NORM_EPS: f32 = 1e-5;
/// `glimmer.attention.post_norm_rms_epsilon`.
pub const POST_NORM_EPS: f32 = 1e-8;
/// `glimmer.final_logit_softcapping`.
pub const SOFTCAP: f32 = 20.0;
/// `glimmer.logit_scale`.
pub const LOGIT_SCALE: f32 = 0.196_116_135_13;
/// The muP query factor times √128: the attention scale is this / √128 / √head_dim.
pub const ATTN_SCALE_NUMERATOR: f64 = 43.784_051_891_1;

/// Standard deviation of `output` times √dim (see the module docs).
const OUTPUT_GAIN: f32 = 16.0;
/// Standard deviation of norm gains around 1.
const GAIN_NOISE: f32 = 0.1;

/// How storage types are assigned to matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// Every matrix is [`SynthConfig::weight_type`].
    Uniform,
    /// llama.cpp's Q4_K_M rule, simplified: `output` is Q6_K; `attn_v` and `ffn_down` are Q6_K
    /// on layers `i < n/8`, `i >= 7n/8` and `(i − n/8) % 3 == 2` (integer division); every
    /// other matrix is [`SynthConfig::weight_type`] (Q4_K for a true Q4_K_M).
    Q4KM,
}

/// Shape, storage and seed of a synthetic Glimmer model.
#[derive(Clone, Debug, PartialEq)]
pub struct SynthConfig {
    /// `general.name`.
    pub name: String,
    /// Residual stream width.
    pub dim: usize,
    /// Decoder layers.
    pub n_layer: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads.
    pub n_head_kv: usize,
    /// Width of one head (keys, queries and values).
    pub head_dim: usize,
    /// FFN hidden width.
    pub n_ff: usize,
    /// Vocabulary size.
    pub vocab: usize,
    /// Control tokens at the end of the vocabulary (at least 7; 2048 gives the real ids).
    pub n_special: usize,
    /// `glimmer.context_length`.
    pub ctx: usize,
    /// Sliding window of the local layers.
    pub window: usize,
    /// RNG seed.
    pub seed: u64,
    /// Storage type of matrices (Q4_K, Q5_K, Q6_K, Q8_0, Q4_0, F16, F32, …).
    pub weight_type: GgmlType,
    /// How types are mixed across matrices.
    pub mix: Mix,
}

impl SynthConfig {
    /// A small model for tests (about 5.6 MB): 8 layers (two global), dim 256, 8 heads of 32,
    /// 2 KV heads, FFN 512, vocabulary 512, window 16, context 256, Q8_0 matrices, seed 1.
    /// Every matrix row is a multiple of 256, so K-quants work too
    /// ([`SynthConfig::tiny_q4_k_m`]).
    pub fn tiny() -> Self {
        Self {
            name: "Muse Glimmer synthetic tiny".to_owned(),
            dim: 256,
            n_layer: 8,
            n_head: 8,
            n_head_kv: 2,
            head_dim: 32,
            n_ff: 512,
            vocab: 512,
            n_special: 8,
            ctx: 256,
            window: 16,
            seed: 1,
            weight_type: GgmlType::Q8_0,
            mix: Mix::Uniform,
        }
    }

    /// [`SynthConfig::tiny`] stored as Q4_K_M (Q4_K with Q6_K for `output` and some
    /// `attn_v`/`ffn_down`; about 3 MB).
    pub fn tiny_q4_k_m() -> Self {
        Self {
            name: "Muse Glimmer synthetic tiny Q4_K_M".to_owned(),
            weight_type: GgmlType::Q4_K,
            mix: Mix::Q4KM,
            ..Self::tiny()
        }
    }

    /// The real model's shape (52 layers, dim 6656, 32 heads of 128, 2 KV heads, FFN 19968,
    /// vocabulary 202048, window 2048, context 131072) as Q4_K_M: about 17 GB.
    pub fn full() -> Self {
        Self {
            name: "Muse Glimmer synthetic full".to_owned(),
            dim: 6656,
            n_layer: 52,
            n_head: 32,
            n_head_kv: 2,
            head_dim: 128,
            n_ff: 19968,
            vocab: 202_048,
            n_special: 2048,
            ctx: 131_072,
            window: 2048,
            seed: 1,
            weight_type: GgmlType::Q4_K,
            mix: Mix::Q4KM,
        }
    }

    /// `glimmer.attention.scale`: 43.7840518911 / √128 / √head_dim.
    pub fn attention_scale(&self) -> f32 {
        (ATTN_SCALE_NUMERATOR / 128f64.sqrt() / (self.head_dim as f64).sqrt()) as f32
    }

    /// Whether layer `i` is global (and NoPE) rather than sliding with RoPE.
    pub fn is_global(i: usize) -> bool {
        i % GLOBAL_INTERVAL as usize == GLOBAL_INTERVAL as usize - 1
    }

    /// Whether [`Mix::Q4KM`] gives layer `i`'s `attn_v` and `ffn_down` more bits.
    fn more_bits(&self, i: usize) -> bool {
        let n = self.n_layer;
        i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
    }

    /// Storage type of matrix `name` (`"output"`, `"attn_v"`, …) of layer `layer`.
    pub fn matrix_type(&self, name: &str, layer: Option<usize>) -> GgmlType {
        if self.mix == Mix::Uniform {
            return self.weight_type;
        }
        match (name, layer) {
            ("output", None) => GgmlType::Q6_K,
            ("attn_v" | "ffn_down", Some(i)) if self.more_bits(i) => GgmlType::Q6_K,
            _ => self.weight_type,
        }
    }

    /// Checks that the numbers describe a model the convention can express.
    fn check(&self) -> Result<(), Error> {
        let bad = |why: &'static str| Err(Error::SynthConfig(why));
        if [
            self.dim,
            self.n_layer,
            self.n_head,
            self.n_head_kv,
            self.head_dim,
            self.n_ff,
        ]
        .contains(&0)
        {
            return bad("every dimension must be positive");
        }
        if !self.n_head.is_multiple_of(self.n_head_kv) {
            return bad("n_head must be a multiple of n_head_kv");
        }
        if !self.head_dim.is_multiple_of(2) {
            return bad("head_dim must be even (RoPE rotates pairs)");
        }
        if self.n_special < vocab::MIN_SPECIAL {
            return bad("n_special must be at least 7");
        }
        if self.vocab < 256 + self.n_special {
            return bad("vocab must hold the 256 byte tokens and the control block");
        }
        if self.window == 0 || self.ctx == 0 {
            return bad("window and ctx must be positive");
        }
        let u32_fits = [
            self.dim,
            self.n_layer,
            self.n_head,
            self.n_ff,
            self.vocab,
            self.ctx,
            self.window,
        ]
        .iter()
        .all(|&v| u32::try_from(v).is_ok());
        if !u32_fits {
            return bad("a dimension does not fit u32");
        }
        Ok(())
    }
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
        .kv_f32(k("logit_scale"), LOGIT_SCALE);

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

    let (dim, q_dim, kv_dim) = (
        cfg.dim,
        cfg.n_head * cfg.head_dim,
        cfg.n_head_kv * cfg.head_dim,
    );
    let add =
        |w: &mut GgufWriter, name: String, ty: GgmlType, ne0: usize, n_rows: usize, fill: Fill| {
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
            w.tensor_with(name, ty, &dims, move |out| gen.write(out))
                .map(|_| ())
        };
    let matrix = |fan_in: usize| Fill::Normal {
        std: 1.0 / (fan_in as f32).sqrt(),
    };
    let gain = Fill::Gain { noise: GAIN_NOISE };
    add(
        &mut w,
        "token_embd.weight".into(),
        cfg.matrix_type("token_embd", None),
        dim,
        cfg.vocab,
        Fill::Normal { std: 1.0 },
    )?;
    add(
        &mut w,
        "output_norm.weight".into(),
        GgmlType::F32,
        dim,
        1,
        gain,
    )?;
    let out_std = OUTPUT_GAIN / (dim as f32).sqrt();
    add(
        &mut w,
        "output.weight".into(),
        cfg.matrix_type("output", None),
        dim,
        cfg.vocab,
        Fill::Normal { std: out_std },
    )?;
    for i in 0..cfg.n_layer {
        let layer: [(&str, usize, usize); 12] = [
            ("attn_norm", dim, 1),
            ("attn_q", dim, q_dim),
            ("attn_k", dim, kv_dim),
            ("attn_v", dim, kv_dim),
            ("attn_gate", dim, q_dim),
            ("attn_output", q_dim, dim),
            ("post_attention_norm", dim, 1),
            ("ffn_norm", dim, 1),
            ("ffn_gate", dim, cfg.n_ff),
            ("ffn_up", dim, cfg.n_ff),
            ("ffn_down", cfg.n_ff, dim),
            ("post_ffw_norm", dim, 1),
        ];
        for (name, ne0, n_rows) in layer {
            let full = format!("blk.{i}.{name}.weight");
            if n_rows == 1 {
                add(&mut w, full, GgmlType::F32, ne0, 1, gain)?;
            } else {
                add(
                    &mut w,
                    full,
                    cfg.matrix_type(name, Some(i)),
                    ne0,
                    n_rows,
                    matrix(ne0),
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

#[cfg(test)]
mod tests;

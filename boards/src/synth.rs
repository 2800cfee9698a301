//! Synthetic Muse Glimmer GGUF files: the real architecture and metadata convention with
//! seeded random weights.
//!
//! [`SynthConfig`] describes the shape and storage types; [`write_synth`] streams the file
//! through [`GgufWriter::tensor_with`](crate::gguf_writer::GgufWriter::tensor_with), generating and quantizing each tensor chunk by chunk,
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
//! in `attn_q` the rows of the second half of each head, and in `attn_k` the rows of the first
//! half, are further scaled by [`SynthConfig::qk_overlap`] (see there);
//! `token_embd` is N(0, 0.05²), far from unit scale, so a graph that skips the embedding norm
//! goes visibly wrong; `output` is N(0, 24²/dim), so the pre-cap logits `z · logit_scale` have
//! a standard deviation of about 4.7 and the softcap bends the largest ones by 15–20 %. Norm
//! gains are 1 + N(0, 0.1²).

mod tensors;
mod vocab;
mod writer;

use glimmer_core::quant::GgmlType;

use crate::Error;
pub use writer::{synth_file_len, synth_writer, write_synth};

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
/// `glimmer.logit_scale` (stored as f32).
pub const LOGIT_SCALE: f64 = 0.196_116_135_13;
/// The muP query factor times √128: the attention scale is this / √128 / √head_dim.
pub const ATTN_SCALE_NUMERATOR: f64 = 43.784_051_891_1;

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
    /// `general.name`: "Muse Glimmer synthetic", the preset and the storage (kept in step by
    /// [`SynthConfig::with_type`]).
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
    /// Factor on the `attn_q` rows of the second half of each head and the `attn_k` rows of the
    /// first half; 1 gives i.i.d. weights.
    ///
    /// QK-norm fixes the length of q and k, so with i.i.d. weights the scores have a standard
    /// deviation of about 3.87 whatever the shape: attention is sharp, and the random model is
    /// chaotic (an f16 KV cache alone moves the tiny model's logits by ~0.7 % of max |logit|).
    /// Below 1 queries and keys live mostly in different halves of the head, so scores spread
    /// less (RoPE rotates pairs within each half, so the split survives it): with 0.25 the same
    /// f16 rounding moves the logits by ~0.1 %, which makes the tiny model a usable reference.
    pub qk_overlap: f32,
}

impl SynthConfig {
    /// A small model for tests (about 5.6 MB): 8 layers (two global), dim 256, 8 heads of 32,
    /// 2 KV heads, FFN 512, vocabulary 512, window 16, context 256, Q8_0 matrices, seed 1,
    /// `qk_overlap` 0.25.
    /// Every matrix row is a multiple of 256, so K-quants work too
    /// ([`SynthConfig::tiny_q4_k_m`]).
    pub fn tiny() -> Self {
        Self {
            name: "Muse Glimmer synthetic tiny q8_0".to_owned(),
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
            qk_overlap: 0.25,
        }
    }

    /// [`SynthConfig::tiny`] with f32 matrices (about 21 MB): activations stay f32 on the CPU
    /// backend, so it is compared to the float64 reference tightly.
    pub fn tiny_f32() -> Self {
        Self::tiny().with_type(GgmlType::F32, Mix::Uniform)
    }

    /// [`SynthConfig::tiny`] stored as Q4_K_M (Q4_K with Q6_K for `output` and some
    /// `attn_v`/`ffn_down`; about 3 MB).
    pub fn tiny_q4_k_m() -> Self {
        Self::tiny().with_type(GgmlType::Q4_K, Mix::Q4KM)
    }

    /// The real model's shape (52 layers, dim 6656, 32 heads of 128, 2 KV heads, FFN 19968,
    /// vocabulary 202048, window 2048, context 131072) as Q4_K_M, i.i.d. weights
    /// (`qk_overlap` 1): about 17 GB.
    pub fn full() -> Self {
        Self {
            name: "Muse Glimmer synthetic full q4_k_m".to_owned(),
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
            qk_overlap: 1.0,
        }
    }

    /// This configuration stored as `ty` mixed by `mix`; the last word of the name becomes the
    /// storage (`q8_0`, `q4_k_m`, …).
    pub fn with_type(mut self, ty: GgmlType, mix: Mix) -> Self {
        let stem = self
            .name
            .rsplit_once(' ')
            .map_or(self.name.as_str(), |(s, _)| s);
        let suffix = if mix == Mix::Q4KM { "_m" } else { "" };
        self.name = format!("{stem} {}{suffix}", ty.name());
        self.weight_type = ty;
        self.mix = mix;
        self
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
    pub(crate) fn check(&self) -> Result<(), Error> {
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
        if !self.head_dim.is_multiple_of(4) {
            return bad("head_dim must be a multiple of 4 (RoPE pairs in each half)");
        }
        if !(self.qk_overlap > 0.0 && self.qk_overlap <= 1.0) {
            return bad("qk_overlap must be in (0, 1]");
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

#[cfg(test)]
mod tests;

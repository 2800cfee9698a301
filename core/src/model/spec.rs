//! [`ModelSpec`]: the hyperparameters of one model, read from GGUF metadata.

use crate::gguf::{ErrName, Gguf};

use super::ModelError;

/// Most layers any supported model may have. Fixed so that [`super::Weights`] needs no allocator.
pub const MAX_LAYERS: usize = 64;

/// A model architecture Glimmer has a graph for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// Llama-style decoder (SmolLM2): pre-norm, SwiGLU, interleaved RoPE on every layer.
    Llama,
    /// Gemma 3: embedding scaling, QK-norm, sandwich norms, GELU-tanh gating, 5 sliding : 1 global.
    Gemma3,
    /// Muse Glimmer: normed embeddings, scaleless QK-norm, sigmoid output gate, sandwich norms,
    /// 3 sliding RoPE layers : 1 global NoPE layer, logit softcap.
    Glimmer,
}

impl Arch {
    /// The `general.architecture` string.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Gemma3 => "gemma3",
            Self::Glimmer => "glimmer",
        }
    }
}

/// How a layer attends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerKind {
    /// Attends to every earlier position.
    Global,
    /// Attends to the last `window` positions (the query's own included).
    Sliding {
        /// Window length in positions.
        window: u32,
    },
}

/// Which dimensions RoPE rotates together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RopeStyle {
    /// GGML "normal": adjacent pairs `(2i, 2i+1)` (llama).
    Interleaved,
    /// GGML "neox": halves `(i, i + d/2)` (gemma3).
    HalfSplit,
}

/// The gated FFN activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `silu(gate) * up` (SwiGLU).
    Silu,
    /// `gelu_tanh(gate) * up` (GeGLU).
    GeluTanh,
}

/// Everything the graph needs to know about a model's shape, read once from GGUF metadata.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelSpec {
    /// Architecture.
    pub arch: Arch,
    /// Decoder layers.
    pub n_layer: usize,
    /// Residual stream width.
    pub n_embd: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads (GQA when fewer than `n_head`).
    pub n_head_kv: usize,
    /// Width of one query/key head.
    pub head_dim: usize,
    /// Width of one value head.
    pub head_dim_v: usize,
    /// FFN hidden width.
    pub n_ff: usize,
    /// Vocabulary size (rows of the embedding table).
    pub n_vocab: usize,
    /// Training context length (informational).
    pub n_ctx_train: usize,
    /// RMSNorm epsilon.
    pub eps: f32,
    /// Dimensions of each head that RoPE rotates.
    pub rope_dim: usize,
    /// RoPE base on global layers.
    pub rope_base: f32,
    /// RoPE base on sliding layers.
    pub rope_base_sliding: f32,
    /// Pair layout of RoPE.
    pub rope_style: RopeStyle,
    /// Sliding window, if the model has sliding layers.
    pub sliding_window: Option<u32>,
    /// Multiply embeddings by this (gemma: √n_embd).
    pub embd_scale: Option<f32>,
    /// RMSNorm (without weight) on the embeddings (glimmer).
    pub embd_norm: bool,
    /// Per-head RMSNorm on Q and K (with learned weights when the file has them, else scaleless).
    pub qk_norm: bool,
    /// Extra RMSNorm after attention and after the FFN (sandwich norms).
    pub post_norms: bool,
    /// Epsilon of the post-attention and post-FFN norms.
    pub post_norm_eps: f32,
    /// Sigmoid gate on the attention output, computed from the attention input (glimmer).
    pub attn_gate: bool,
    /// Layers `i` with `i % global_interval == global_interval - 1` are global (glimmer: 4).
    pub global_interval: usize,
    /// `logits = cap · tanh(logits · scale / cap)`, as `(cap, scale)` (glimmer).
    pub logit_softcap: Option<(f32, f32)>,
    /// Scale applied to Q before `softmax(QKᵀ)`.
    pub attn_scale: f32,
    /// FFN activation.
    pub activation: Activation,
}

fn key(prefix: &str, suffix: &str, buf: &mut [u8; 96]) -> usize {
    let mut n = 0;
    for b in prefix.bytes().chain(".".bytes()).chain(suffix.bytes()) {
        if n < buf.len() {
            buf[n] = b;
            n += 1;
        }
    }
    n
}

/// Reads `<arch>.<suffix>` keys.
struct Meta<'g, 'a> {
    g: &'g Gguf<'a>,
    arch: &'static str,
}

impl Meta<'_, '_> {
    fn with_key<T>(&self, suffix: &str, f: impl FnOnce(&str) -> T) -> T {
        let mut buf = [0u8; 96];
        let n = key(self.arch, suffix, &mut buf);
        // Both parts are UTF-8 and joined at a char boundary; a cut at 96 bytes could split a
        // char only for absurdly long keys, which would then simply not be found.
        let k = core::str::from_utf8(&buf[..n]).unwrap_or("");
        f(k)
    }

    fn opt_u(&self, suffix: &str) -> Result<Option<usize>, ModelError> {
        self.with_key(suffix, |k| match self.g.get_u64(k)? {
            None => Ok(None),
            Some(v) => usize::try_from(v)
                .map(Some)
                .map_err(|_| ModelError::BadValue(ErrName::new(k))),
        })
    }

    fn req_u(&self, suffix: &str) -> Result<usize, ModelError> {
        self.opt_u(suffix)?
            .ok_or_else(|| self.with_key(suffix, |k| ModelError::MissingKey(ErrName::new(k))))
    }

    fn nonzero(&self, suffix: &str) -> Result<usize, ModelError> {
        match self.req_u(suffix)? {
            0 => Err(self.with_key(suffix, |k| ModelError::BadValue(ErrName::new(k)))),
            v => Ok(v),
        }
    }

    fn opt_f(&self, suffix: &str) -> Result<Option<f32>, ModelError> {
        self.with_key(suffix, |k| Ok(self.g.get_f32(k)?))
    }

    /// `attention.sliding_window`, required and non-zero.
    fn window(&self) -> Result<u32, ModelError> {
        let w = self.req_u("attention.sliding_window")?;
        u32::try_from(w)
            .ok()
            .filter(|w| *w > 0)
            .ok_or_else(|| self.bad("attention.sliding_window"))
    }

    fn bad(&self, suffix: &str) -> ModelError {
        self.with_key(suffix, |k| ModelError::BadValue(ErrName::new(k)))
    }
}

impl ModelSpec {
    /// Reads the spec from a parsed GGUF file and checks it for consistency.
    ///
    /// The vocabulary size comes from the `token_embd` tensor, which every supported
    /// architecture has, so it cannot disagree with the weights.
    pub fn from_gguf(g: &Gguf<'_>) -> Result<Self, ModelError> {
        let arch_name = g
            .get_str("general.architecture")?
            .ok_or(ModelError::MissingKey(ErrName::new("general.architecture")))?;
        let arch = match arch_name {
            "llama" => Arch::Llama,
            "gemma3" => Arch::Gemma3,
            "glimmer" => Arch::Glimmer,
            other => return Err(ModelError::UnknownArch(ErrName::new(other))),
        };
        let m = Meta {
            g,
            arch: arch.name(),
        };
        let n_layer = m.nonzero("block_count")?;
        if n_layer > MAX_LAYERS {
            return Err(ModelError::TooManyLayers(n_layer));
        }
        let n_embd = m.nonzero("embedding_length")?;
        let n_head = m.nonzero("attention.head_count")?;
        let n_head_kv = match m.opt_u("attention.head_count_kv")? {
            None => n_head,
            Some(0) => return Err(m.bad("attention.head_count_kv")),
            Some(v) => v,
        };
        if n_head % n_head_kv != 0 {
            return Err(m.bad("attention.head_count_kv"));
        }
        let head_dim = match m.opt_u("attention.key_length")? {
            Some(0) => return Err(m.bad("attention.key_length")),
            Some(v) => v,
            None if n_embd % n_head == 0 => n_embd / n_head,
            None => return Err(m.bad("attention.head_count")),
        };
        let head_dim_v = match m.opt_u("attention.value_length")? {
            Some(0) => return Err(m.bad("attention.value_length")),
            Some(v) => v,
            None => head_dim,
        };
        let n_ff = m.nonzero("feed_forward_length")?;
        let n_ctx_train = m.opt_u("context_length")?.unwrap_or(0);
        let eps = m.opt_f("attention.layer_norm_rms_epsilon")?.unwrap_or(1e-5);
        if !(eps > 0.0 && eps < 1.0) {
            return Err(m.bad("attention.layer_norm_rms_epsilon"));
        }
        let rope_dim = m.opt_u("rope.dimension_count")?.unwrap_or(head_dim);
        if rope_dim == 0 || rope_dim > head_dim || rope_dim % 2 != 0 {
            return Err(m.bad("rope.dimension_count"));
        }
        let rope_base = m.opt_f("rope.freq_base")?.unwrap_or(10_000.0);
        if !(rope_base > 1.0 && rope_base.is_finite()) {
            return Err(m.bad("rope.freq_base"));
        }
        let n_vocab = g
            .tensor("token_embd.weight")
            .ok_or(ModelError::MissingTensor(ErrName::new("token_embd.weight")))?
            .n_rows();
        if n_vocab == 0 {
            return Err(ModelError::BadShape(ErrName::new("token_embd.weight")));
        }

        // The llama graph is the base; the other architectures change what they add.
        let base = ModelSpec {
            arch,
            n_layer,
            n_embd,
            n_head,
            n_head_kv,
            head_dim,
            head_dim_v,
            n_ff,
            n_vocab,
            n_ctx_train,
            eps,
            rope_dim,
            rope_base,
            rope_base_sliding: rope_base,
            rope_style: RopeStyle::Interleaved,
            sliding_window: None,
            embd_scale: None,
            embd_norm: false,
            qk_norm: false,
            post_norms: false,
            post_norm_eps: eps,
            attn_gate: false,
            global_interval: 0,
            logit_softcap: None,
            attn_scale: 1.0 / libm_sqrt(head_dim as f32),
            activation: Activation::Silu,
        };
        let spec = match arch {
            Arch::Llama => base,
            Arch::Gemma3 => ModelSpec {
                // llama.cpp hard-codes the local base for gemma3's sliding layers.
                rope_base_sliding: 10_000.0,
                rope_style: RopeStyle::HalfSplit,
                sliding_window: Some(m.window()?),
                embd_scale: Some(libm_sqrt(n_embd as f32)),
                qk_norm: true,
                post_norms: true,
                activation: Activation::GeluTanh,
                ..base
            },
            Arch::Glimmer => {
                let post_norm_eps = m.opt_f("attention.post_norm_rms_epsilon")?.unwrap_or(1e-8);
                if !(post_norm_eps > 0.0 && post_norm_eps < 1.0) {
                    return Err(m.bad("attention.post_norm_rms_epsilon"));
                }
                let attn_scale = match m.opt_f("attention.scale")? {
                    Some(v) if v > 0.0 && v.is_finite() => v,
                    Some(_) => return Err(m.bad("attention.scale")),
                    None => 43.784_05 / libm_sqrt(128.0) / libm_sqrt(head_dim as f32),
                };
                let global_interval = m.opt_u("attention.global_interval")?.unwrap_or(4);
                if global_interval == 0 {
                    return Err(m.bad("attention.global_interval"));
                }
                let cap = m.opt_f("final_logit_softcapping")?.unwrap_or(20.0);
                let scale = m.opt_f("logit_scale")?.unwrap_or(0.196_116_14);
                if !(cap > 0.0 && cap.is_finite() && scale.is_finite()) {
                    return Err(m.bad("final_logit_softcapping"));
                }
                ModelSpec {
                    sliding_window: Some(m.window()?),
                    embd_norm: true,
                    qk_norm: true,
                    post_norms: true,
                    post_norm_eps,
                    attn_gate: true,
                    global_interval,
                    logit_softcap: Some((cap, scale)),
                    attn_scale,
                    ..base
                }
            }
        };
        Ok(spec)
    }

    /// How layer `il` attends.
    pub fn layer_kind(&self, il: usize) -> LayerKind {
        match (self.arch, self.sliding_window) {
            // gemma3: five sliding layers, then one global.
            (Arch::Gemma3, Some(window)) if il % 6 < 5 => LayerKind::Sliding { window },
            // glimmer: three sliding layers, then one global (i % 4 == 3 with interval 4).
            (Arch::Glimmer, Some(window))
                if il % self.global_interval != self.global_interval - 1 =>
            {
                LayerKind::Sliding { window }
            }
            _ => LayerKind::Global,
        }
    }

    /// Whether layer `il` applies RoPE (glimmer's global layers are NoPE).
    pub fn layer_uses_rope(&self, il: usize) -> bool {
        !(self.arch == Arch::Glimmer && self.layer_kind(il) == LayerKind::Global)
    }

    /// RoPE base for layer `il`.
    pub fn rope_base_for(&self, il: usize) -> f32 {
        match self.layer_kind(il) {
            LayerKind::Global => self.rope_base,
            LayerKind::Sliding { .. } => self.rope_base_sliding,
        }
    }

    /// Width of the query projection (`n_head · head_dim`).
    pub fn q_dim(&self) -> usize {
        self.n_head * self.head_dim
    }

    /// Width of one position's keys (`n_head_kv · head_dim`).
    pub fn k_dim(&self) -> usize {
        self.n_head_kv * self.head_dim
    }

    /// Width of one position's values (`n_head_kv · head_dim_v`).
    pub fn v_dim(&self) -> usize {
        self.n_head_kv * self.head_dim_v
    }
}

fn libm_sqrt(x: f32) -> f32 {
    libm::sqrtf(x)
}

//! The std side's error type.

use glimmer_core::cpu::CpuError;
use glimmer_core::exec::{ForwardError, LayoutError};
use glimmer_core::gguf::GgufError;
use glimmer_core::model::ModelError;

use crate::gguf_writer::GgufWriteError;
use crate::tokenizer::TokenizerError;

/// Everything that can go wrong on the std side.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be opened or read.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// The model file is malformed.
    #[error("malformed GGUF: {0}")]
    Gguf(GgufError),
    /// The model file does not describe a usable model.
    #[error("unusable model: {0}")]
    Model(ModelError),
    /// The tokenizer could not be built or used.
    #[error("tokenizer: {0}")]
    Tokenizer(#[from] TokenizerError),
    /// The tokenizer and the embedding table disagree on the vocabulary size.
    #[error("tokenizer has {tokenizer} tokens but the embedding table has {model} rows")]
    VocabMismatch {
        /// Tokens in the vocabulary.
        tokenizer: usize,
        /// Rows of `token_embd`.
        model: usize,
    },
    /// The limits are invalid.
    #[error("invalid limits: {0:?}")]
    Layout(LayoutError),
    /// A buffer would be too large, or a position ran out of range.
    #[error("{0} too large")]
    TooLarge(&'static str),
    /// The KV cache refused the request.
    #[error("KV cache: {0}")]
    Kv(#[from] glimmer_core::kv::KvError),
    /// No engine slot has this index.
    #[error("no engine slot {0}")]
    NoSuchSlot(usize),
    /// The forward pass failed.
    #[error("forward pass: {0:?}")]
    Forward(ForwardError<CpuError>),
    /// Sampling failed.
    #[error("sampling: {0:?}")]
    Sample(glimmer_core::sample::SampleError),
    /// The prompt does not fit the context.
    #[error("prompt of {prompt} tokens does not fit a context of {ctx}")]
    PromptTooLong {
        /// Prompt tokens.
        prompt: usize,
        /// Context length.
        ctx: usize,
    },
    /// A synthetic model configuration is unusable.
    #[error("synthetic model config: {0}")]
    SynthConfig(&'static str),
    /// The GPU could not be opened, or refused the model (wgpu engine).
    #[cfg(feature = "wgpu")]
    #[error("GPU: {0}")]
    Gpu(glimmer_apple::GpuError),
    /// The forward pass failed on the GPU (wgpu engine).
    #[cfg(feature = "wgpu")]
    #[error("forward pass on the GPU: {0:?}")]
    GpuForward(ForwardError<glimmer_apple::GpuError>),
    /// The CUDA device could not be opened, or refused the model (CUDA engine).
    #[cfg(feature = "cuda")]
    #[error("CUDA: {0}")]
    Cuda(glimmer_jetson::CudaError),
    /// The forward pass failed on the CUDA device.
    #[cfg(feature = "cuda")]
    #[error("forward pass on the CUDA device: {0:?}")]
    CudaForward(ForwardError<glimmer_jetson::CudaError>),
    /// The backend asked for is not available in this build or on this machine.
    #[error("backend {backend} unavailable: {why}")]
    BackendUnavailable {
        /// The backend's name (`cpu`, `wgpu`, `cuda`).
        backend: &'static str,
        /// Why, and what to use instead.
        why: &'static str,
    },
    /// Writing a GGUF file failed (boxed: the writer's errors carry tensor names).
    #[error("writing GGUF: {0}")]
    GgufWrite(Box<GgufWriteError>),
}

impl From<GgufWriteError> for Error {
    fn from(e: GgufWriteError) -> Self {
        Self::GgufWrite(Box::new(e))
    }
}

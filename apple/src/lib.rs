//! # glimmer-apple
//!
//! The GPU backend of Glimmer: WGSL kernels (in the workspace's `shaders/`) run through wgpu,
//! on Metal on Apple Silicon and on Vulkan elsewhere (lavapipe, Mesa's CPU Vulkan driver, in
//! CI).
//!
//! How the pieces fit:
//! - [`GpuContext`] opens the adapter and device and decides whether the kernels use subgroup
//!   reductions ([`GpuOptions`]).
//! - [`GpuBackend`] implements [`glimmer_core::exec::Backend`]. It holds the activation arena
//!   of a [`glimmer_core::exec::Layout`] (split into several storage buffers when it exceeds
//!   the adapter's largest binding), the weights ([`GpuBackend::upload_model`], copied once,
//!   GGUF blocks byte for byte), the KV cache ([`KvShape`], f16 or f32, one buffer per layer
//!   and session slot, rings for sliding layers; [`GpuBackend::set_slot`] picks the slot) and
//!   the pipelines, made on first use and cached.
//! - Ops record compute passes into one command encoder; `read` submits the step and maps the
//!   result back: a decode step is one submission.
//!
//! Weights are read as stored, with one exception: the kernels address the weight buffers by
//! byte (blocks such as Q4_0's 18 bytes are only 2-byte aligned) with u32 loads and funnel
//! shifts. Q6_K blocks (210 bytes) are padded to 224 at upload, so they start 16-byte
//! aligned. The decode matvecs of the two formats that carry most of a Q4_K_M model, Q4_K
//! (144-byte blocks, aligned as stored) and Q6_K, read whole 16-byte words
//! (`shaders/matvec_k.wgsl`). Matmuls multiply dequantized weights with
//! f32 activations (the CPU reference quantizes activations to 8 bits first, so the two agree
//! to that precision).
#![deny(missing_docs)]

mod arena;
mod backend;
mod context;
mod error;
mod kv;
mod ops;
mod recorder;
mod shaders;
mod timing;
mod weights;

pub use backend::GpuBackend;
pub use context::{GpuContext, GpuOptions};
pub use error::GpuError;
pub use kv::{GpuKvType, KvShape};
pub use shaders::supports;

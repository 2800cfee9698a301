//! # glimmer-core
//!
//! The allocation-free heart of Glimmer. Everything here runs on `#![no_std]` targets with no
//! allocator: the std side (the `glimmer-boards` crate) maps the model file and hands the core
//! plain slices and one arena.
//!
//! How the pieces fit:
//! - [`gguf`] reads a GGUF file zero-copy out of a `&[u8]` and checks every size against it.
//! - [`quant`] holds the block formats (Q4_0 … Q6_K, Q8_K) with dequantization and dot products.
//! - [`model`] turns GGUF metadata into a [`model::ModelSpec`] and binds the tensors of one
//!   architecture (`llama`, `gemma3`, `glimmer`) into [`model::Weights`].
//! - [`exec`] defines the [`exec::Backend`] kernel trait and writes the forward pass once against it.
//! - [`cpu`] is the reference CPU backend.
//! - [`kv`] is the hybrid KV cache in fixed, reference-counted pages (rings for sliding layers).
//! - [`plan`] sizes weights, KV cache and arena for given limits and checks them against a budget.
//! - [`sample`] turns logits into tokens (greedy, temperature, top-k, top-p) with a seeded RNG.
//! - [`chat`] renders conversations with a model's chat template and parses tool calls as they stream.
//! - [`proto`] is the framed postcard wire protocol between the daemon and its clients.
#![no_std]

pub mod chat;
pub mod cpu;
pub mod exec;
pub mod gguf;
pub mod kv;
pub mod model;
pub mod plan;
pub mod proto;
pub mod quant;
pub mod sample;

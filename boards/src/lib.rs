//! # glimmer-boards
//!
//! The std side of Glimmer: it maps model files ([`model_file`]), builds tokenizers from their
//! vocabularies ([`tokenizer`]), owns the memory the core computes in ([`engine`]), writes GGUF
//! files for tests ([`gguf_writer`]), generates synthetic Muse Glimmer models ([`synth`]),
//! holds the board profiles ([`profiles`]) and the plan report ([`plan_report`]), and hosts the
//! command-line tools.
//!
//! [`cpu_features::detect`] finds the CPU's SIMD features for the core's quant kernels.
//!
//! The core never sees a file or a thread: [`engine::Engine`] hands it slices.

pub mod client;
pub mod cpu_features;
pub mod daemon;
pub mod engine;
mod error;
pub mod gguf_writer;
pub mod model_file;
pub mod plan_report;
pub mod profiles;
pub mod synth;
pub mod tokenizer;

pub use error::Error;

//! # glimmer-boards
//!
//! The std side of Glimmer: it maps model files ([`model_file`]), builds tokenizers from their
//! vocabularies ([`tokenizer`]), owns the memory the core computes in ([`engine`]), writes GGUF
//! files for tests ([`gguf_writer`]), generates synthetic Muse Glimmer models ([`synth`]),
//! holds the board profiles ([`profiles`]) and the plan report ([`plan_report`]), and hosts the
//! command-line tools.
//!
//! Sensors and actuators: [`hal`] has drivers over the embedded-hal 1.0 traits and the boards
//! they run on (a simulated thermal plant, Linux devices); [`tools`] exposes them to the model
//! as tools with schemas, timeouts, limits and a watchdog.
//!
//! [`cpu_features::detect`] finds the CPU's SIMD features for the core's quant kernels.
//!
//! The core never sees a file or a thread: [`engine::Engine`] hands it slices, and a
//! [`pool::Pool`] of worker threads behind the core's `Parallel` trait.

pub mod bench;
pub mod client;
pub mod cpu_features;
#[cfg(all(feature = "cuda", not(target_os = "macos")))]
pub mod cuda_engine;
pub mod daemon;
pub mod engine;
mod error;
pub mod gguf_writer;
#[cfg(feature = "wgpu")]
pub mod gpu_engine;
pub mod hal;
pub mod model_file;
pub mod plan_measure;
pub mod plan_report;
pub mod pool;
pub mod profile;
pub mod profiles;
pub mod rss;
pub mod synth;
pub mod tokenizer;
pub mod tools;

pub use error::Error;

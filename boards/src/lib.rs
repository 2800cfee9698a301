//! # glimmer-boards
//!
//! The std side of Glimmer (being written).
pub mod gguf_writer;
pub mod tokenizer;

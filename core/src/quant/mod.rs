//! Quantized block formats: layouts, dequantization, quantization and dot products.
//!
//! How the pieces fit:
//! - [`GgmlType`] is the type table (ids, block geometry, byte sizes).
//! - The block structs (`BlockQ4_0` … [`BlockQ8K`]) mirror GGUF bytes exactly, with alignment
//!   1 so any byte slice of the right length can be viewed as blocks.
//! - Each 4/5/6-bit block unpacks its quants into an integer array with `quants()`; the
//!   kernels start from there.
//! - Typed kernels work on block slices: `dequantize_<t>`, `quantize_<t>` and
//!   `vec_dot_<w>_<a>`. They are the scalar reference.
//! - [`simd`] holds the SIMD kernels (AVX2, AVX-VNNI, AVX512-VNNI, NEON, NEON+SDOT), tested
//!   against the scalar ones; [`Kernels`] picks them at run time from [`CpuFeatures`] and is
//!   what a matmul should call ([`Kernels::dot_rows`], [`Kernels::quantize_row`]).
//! - The byte-level entry points [`dequantize_row`], [`quantize_row`], [`quantize_weights`]
//!   and [`vec_dot`] check every length and dispatch on the type.
//!
//! A matmul row `w · x` with weight type `t` is computed as in llama.cpp's CPU backend: quantize
//! `x` once to [`vec_dot_type`]`(t)` with [`quantize_row`], then [`vec_dot`] each weight row.
//!
//! Numerics: dequantization matches gguf-py's `gguf.quants.dequantize` bit for bit; Q4_0, Q4_1,
//! Q5_0, Q8_0, F16 and BF16 quantization matches gguf-py's (and ggml's reference) bit for bit;
//! Q8_1 and Q8_K follow ggml's reference quantizers.
mod blocks;
mod dequant;
mod dot;
mod kquantize;
mod num;
mod quantize;
pub mod simd;
#[cfg(test)]
mod tests;
mod types;
mod unpack;

pub use blocks::{
    get_scale_min_k4, pack_scales_mins, unpack_scales_mins, Bf16Le, BlockQ4K, BlockQ4_0, BlockQ4_1,
    BlockQ5K, BlockQ5_0, BlockQ6K, BlockQ8K, BlockQ8_0, BlockQ8_1, F16Le, F32Le, I16Le,
    K_SCALE_SIZE, QK32, QK_K,
};
pub use dequant::{
    dequantize_bf16, dequantize_f16, dequantize_f32, dequantize_q4_0, dequantize_q4_1,
    dequantize_q4_k, dequantize_q5_0, dequantize_q5_k, dequantize_q6_k, dequantize_q8_0,
    dequantize_q8_1, dequantize_q8_k,
};
pub use dot::{
    vec_dot_bf16, vec_dot_f16, vec_dot_f32, vec_dot_q4_0_q8_0, vec_dot_q4_1_q8_1,
    vec_dot_q4_k_q8_k, vec_dot_q5_0_q8_0, vec_dot_q5_k_q8_k, vec_dot_q6_k_q8_k, vec_dot_q8_0_q8_0,
    vec_dot_q8_k_q8_k,
};
pub use kquantize::{quantize_q4_k, quantize_q5_k, quantize_q6_k};
pub use quantize::{
    quantize_bf16, quantize_f16, quantize_f32, quantize_q4_0, quantize_q4_1, quantize_q5_0,
    quantize_q8_0, quantize_q8_1, quantize_q8_k,
};
pub use types::GgmlType;

mod api;
pub use api::{dequantize_row, quantize_row, quantize_weights, vec_dot, vec_dot_type, QuantError};
pub use simd::{exp_f32, CpuFeatures, F16Rows, Feature, Isa, Kernels};

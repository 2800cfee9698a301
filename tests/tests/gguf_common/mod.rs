//! Shared GGUF fixtures for the malformed-input and mutation tests: a small valid file built
//! with the boards writer, and helpers to find and patch its fields.
#![allow(dead_code)] // each test binary uses a different subset

use glimmer_boards::gguf_writer::{GgufWriter, OwnedArray, OwnedValue};
use glimmer_core::quant::GgmlType;

/// The tensors of [`base_writer`]: name, type, dims. Their bytes are a running counter; the
/// last one ends off the alignment, so the file ends in padding.
pub const TENSORS: [(&str, GgmlType, &[u64]); 3] = [
    ("token_embd.weight", GgmlType::Q8_0, &[32, 3]),
    ("output.weight", GgmlType::Q4_K, &[256, 1, 1, 2]),
    ("blk.0.attn_norm.weight", GgmlType::F32, &[5]),
];

/// A small llama-like file: every kind of metadata value and three tensors.
pub fn base_writer() -> GgufWriter {
    let mut w = GgufWriter::new();
    w.kv_str("general.architecture", "llama")
        .kv_u32("llama.block_count", 1)
        .kv_u64("llama.context_length", 2048)
        .kv_f32("llama.rope.freq_base", 10_000.0)
        .kv_bool("tokenizer.ggml.add_bos_token", true)
        .kv_i32("test.negative", -3)
        .kv("test.f64", OwnedValue::F64(-0.5))
        .kv("test.i16", OwnedValue::I16(-7))
        .kv("test.u8s", OwnedValue::Array(OwnedArray::U8(vec![1, 2, 3])))
        .kv(
            "test.bools",
            OwnedValue::Array(OwnedArray::Bool(vec![true, false])),
        )
        .kv_array_str("tokenizer.ggml.tokens", &["<s>", "</s>", "héllo"])
        .kv_array_f32("tokenizer.ggml.scores", &[0.0, -1.0, -2.5])
        .kv_array_i32("tokenizer.ggml.token_type", &[3, 3, 1])
        .kv_array_u32("test.u32s", &[7, 8]);
    let mut counter = 0u8;
    for (name, ty, dims) in TENSORS {
        let size = GgufWriter::tensor_size(ty, dims).unwrap() as usize;
        let bytes = (0..size)
            .map(|_| {
                counter = counter.wrapping_add(1);
                counter
            })
            .collect();
        w.tensor(name, ty, dims, bytes).unwrap();
    }
    w
}

/// The bytes of [`base_writer`].
pub fn base_bytes() -> Vec<u8> {
    base_writer().to_bytes()
}

/// The offset of the only occurrence of `needle` in `hay`.
pub fn find_unique(hay: &[u8], needle: &[u8]) -> usize {
    let hits: Vec<usize> = hay
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "{:?} occurs {} times",
        String::from_utf8_lossy(needle),
        hits.len()
    );
    hits[0]
}

/// The GGUF encoding of a string (u64 length, bytes).
pub fn gguf_str(s: &str) -> Vec<u8> {
    let mut v = (s.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

/// Where the fields of one tensor-info record sit in the file.
#[derive(Clone, Copy, Debug)]
pub struct Record {
    /// Offset of the name's length field.
    pub start: usize,
    /// Offset of the u32 n_dims.
    pub n_dims: usize,
    /// Offset of the first u64 dim.
    pub dims: usize,
    /// Offset of the u32 type.
    pub ty: usize,
    /// Offset of the u64 data offset.
    pub offset: usize,
    /// One past the record.
    pub end: usize,
}

/// Locates the tensor-info record of `name` (the name must occur once in the file).
pub fn record(bytes: &[u8], name: &str) -> Record {
    let start = find_unique(bytes, &gguf_str(name));
    let n_dims = start + 8 + name.len();
    let count = read_u32(bytes, n_dims) as usize;
    let dims = n_dims + 4;
    let ty = dims + 8 * count;
    Record {
        start,
        n_dims,
        dims,
        ty,
        offset: ty + 4,
        end: ty + 12,
    }
}

/// Reads a little-endian u32.
pub fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// Reads a little-endian u64.
pub fn read_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// Overwrites a little-endian u32.
pub fn put_u32(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Overwrites a little-endian u64.
pub fn put_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

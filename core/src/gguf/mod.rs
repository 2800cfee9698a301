//! Zero-copy GGUF reader.
//!
//! [`Gguf::parse`] takes the whole file as one `&[u8]` (typically a memory map) and validates
//! every structure before returning; afterwards every lookup borrows from that slice and
//! cannot fail on structure. Nothing is allocated and nothing is copied.
//!
//! # Layout read (GGUF v2 and v3, little-endian)
//! ```text
//! "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//! n_kv ×      { string key | u32 value type | value }
//! n_tensors × { string name | u32 n_dims | u64 dims[n_dims] | u32 ggml type | u64 offset }
//! padding to `general.alignment` (default 32) | tensor data
//! ```
//! A string is a u64 byte length followed by UTF-8 bytes; an array is a u32 element type,
//! a u64 count and the elements. Tensor offsets are relative to the data region.
//!
//! # How the types fit
//! - [`Gguf`]: the parsed file; typed getters ([`Gguf::get_u64`], [`Gguf::get_str`], …) and
//!   tensor lookup ([`Gguf::tensor`], [`Gguf::tensors`]).
//! - [`Value`] / [`ValueType`]: one metadata value and its type tag.
//! - [`ArrayView`]: an array value, read in place.
//! - [`TensorInfo`]: one tensor's name, [`GgmlType`](crate::quant::GgmlType), shape and bytes.
//! - [`GgufError`]: why a file was rejected, with byte offsets and key or tensor names
//!   carried in [`ErrName`]s.
//!
//! # What `parse` rejects
//! - **Header:** a bad magic; version 1 or another unknown version; a big-endian file.
//! - **Sizes:** anything that runs past the buffer ([`GgufError::Truncated`], naming the
//!   [`Field`]); counts above [`MAX_TENSORS`] or [`MAX_KVS`]; strings longer than
//!   [`MAX_STRING_LEN`]; array sizes that overflow.
//! - **Metadata:** invalid UTF-8; unknown value or array element types; nested arrays (not
//!   supported); bool bytes other than 0 or 1; duplicate keys; a `general.alignment` that is
//!   not a u32 power of two up to [`MAX_ALIGNMENT`].
//! - **Tensors:**
//!   - 0 or more than 4 dimensions, or a dimension of 0 (empty tensors are rejected);
//!   - an unknown type, or a row length (ne0) that is not a whole number of blocks;
//!   - an element count above `i64::MAX`, or a byte size that overflows;
//!   - an offset that is not a multiple of the alignment, or data past the end of the buffer;
//!   - duplicate names, or overlapping byte ranges.
//!
//! The whole-table checks use no allocation:
//! - **Overlaps.** When offsets increase in table order (every real file), one pass over
//!   adjacent pairs suffices. Otherwise the table is checked chunk by chunk (below), but only
//!   up to [`MAX_UNSORTED_TENSORS`]; a larger unsorted table is
//!   [`GgufError::UnsortedTensorTable`].
//! - **Duplicate names and keys.** Fixed chunks of 128 entries are sorted on the stack
//!   (hash, then name), and every later entry is looked up in each chunk. That is one table
//!   walk per 128 entries, the reason for the [`MAX_TENSORS`] and [`MAX_KVS`] caps: a file at
//!   both caps parses in under a second on a desktop core.
//!
//! Absurd counts and lengths fail fast: a count whose minimal entries could not fit in the
//! bytes that remain is reported as `Truncated` before anything is read.

mod checks;
mod cursor;
mod error;
mod reader;
mod tensor;
mod value;

#[cfg(test)]
mod tests;

pub use error::{ErrName, ErrorKind, Field, GgufError, ERR_NAME_CAP};
pub use reader::{Gguf, KvIter, TensorIter};
pub use tensor::{TensorInfo, MAX_DIMS};
pub use value::{ArrayIter, ArrayView, StrIter, Value, ValueType};

/// Alignment of the data region when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: usize = 32;
/// Largest `general.alignment` accepted (1 MiB).
pub const MAX_ALIGNMENT: usize = 1 << 20;
/// Most tensors a file may declare.
pub const MAX_TENSORS: usize = 1 << 16;
/// Most tensors a file may list out of offset order (see [`GgufError::UnsortedTensorTable`]).
pub const MAX_UNSORTED_TENSORS: usize = 4096;
/// Most key/value entries a file may declare.
pub const MAX_KVS: usize = 1 << 14;
/// Longest string accepted, in bytes; a longer declared length is [`GgufError::StringTooLong`].
pub const MAX_STRING_LEN: u64 = u32::MAX as u64;
/// The four bytes every GGUF file starts with.
pub const MAGIC: [u8; 4] = *b"GGUF";

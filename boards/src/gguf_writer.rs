//! A GGUF v3 writer for tests and synthetic models.
//!
//! [`GgufWriter`] collects metadata ([`OwnedValue`]s) and tensors, then streams the file:
//! header, key/value table, tensor-info table, padding, and each tensor's bytes at its aligned
//! offset. The last tensor is padded to the alignment as well, as llama.cpp expects.
//!
//! Tensor bytes come either owned ([`GgufWriter::tensor`]) or from a closure called during
//! the write ([`GgufWriter::tensor_with`]). With closures a multi-gigabyte synthetic model is
//! written straight to a file without ever being held in memory.
//!
//! ```
//! use glimmer_boards::gguf_writer::GgufWriter;
//! use glimmer_core::{gguf::Gguf, quant::GgmlType};
//!
//! let mut w = GgufWriter::new();
//! w.kv_str("general.architecture", "llama").kv_u32("llama.block_count", 2);
//! w.tensor("output_norm.weight", GgmlType::F32, &[4], vec![0u8; 16]).unwrap();
//! let bytes = w.to_bytes();
//! let g = Gguf::parse(&bytes).unwrap();
//! assert_eq!(g.get_u64("llama.block_count"), Ok(Some(2)));
//! ```
//!
//! Keys are a set: writing a key again replaces its value in place. `general.alignment` is an
//! ordinary key with one extra effect: when set to a valid alignment (a power of two up to
//! 1 MiB, as a u32) it also sets the layout. Set it to anything else and the file declares
//! that value while keeping the previous layout. That is how malformed-alignment test files
//! are written.

mod value;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{self, Read, Write};

use glimmer_core::gguf::{DEFAULT_ALIGNMENT, MAGIC, MAX_ALIGNMENT, MAX_DIMS};
use glimmer_core::quant::GgmlType;
pub use value::{OwnedArray, OwnedValue};

/// Why a tensor was refused or a write failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum GgufWriteError {
    /// A tensor has no dimensions or more than four.
    #[error("tensor {name}: {n_dims} dimensions (1..=4 allowed)")]
    BadDimCount {
        /// The tensor.
        name: String,
        /// The number of dimensions given.
        n_dims: usize,
    },
    /// A tensor dimension is 0.
    #[error("tensor {name}: dimension {dim} is 0")]
    ZeroDim {
        /// The tensor.
        name: String,
        /// Which dimension.
        dim: usize,
    },
    /// The row length is not a whole number of blocks of the type.
    #[error("tensor {name}: row length {ne0} is not a multiple of the {ty:?} block size")]
    NotBlockAligned {
        /// The tensor.
        name: String,
        /// The row length.
        ne0: u64,
        /// The type.
        ty: GgmlType,
    },
    /// The element count or byte size overflows.
    #[error("tensor {name}: shape overflows")]
    ShapeOverflow {
        /// The tensor.
        name: String,
    },
    /// Owned tensor bytes do not match the shape and type.
    #[error("tensor {name}: {got} bytes given, shape and type need {expected}")]
    ByteLength {
        /// The tensor.
        name: String,
        /// Bytes the shape and type need.
        expected: u64,
        /// Bytes given.
        got: u64,
    },
    /// A lazy tensor source wrote a different number of bytes than its shape needs.
    #[error("tensor {name}: source wrote {written} bytes, shape and type need {expected}")]
    SourceLength {
        /// The tensor.
        name: String,
        /// Bytes the shape and type need.
        expected: u64,
        /// Bytes written.
        written: u64,
    },
    /// Two tensors with one name.
    #[error("duplicate tensor {name}")]
    DuplicateTensor {
        /// The name.
        name: String,
    },
    /// The output (or a lazy tensor source) failed.
    #[error("write failed: {0}")]
    Io(#[from] io::Error),
}

/// Writes tensor bytes into the output during [`GgufWriter::write_to`].
pub type TensorSource = Box<dyn FnMut(&mut dyn Write) -> io::Result<()>>;

enum Source {
    Owned(Vec<u8>),
    Lazy(TensorSource),
}

struct PendingTensor {
    name: String,
    ty: GgmlType,
    dims: Vec<u64>,
    size: u64,
    source: Source,
}

/// Builds a GGUF v3 file: metadata and tensors in insertion order.
pub struct GgufWriter {
    version: u32,
    alignment: usize,
    kvs: Vec<(String, OwnedValue)>,
    tensors: Vec<PendingTensor>,
    kv_index: HashMap<String, usize>,
    names: HashSet<String>,
}

impl fmt::Debug for GgufWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GgufWriter")
            .field("version", &self.version)
            .field("alignment", &self.alignment)
            .field("n_kv", &self.kvs.len())
            .field("n_tensors", &self.tensors.len())
            .finish()
    }
}

impl Default for GgufWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl GgufWriter {
    /// An empty v3 file with the default alignment (32).
    pub fn new() -> Self {
        Self {
            version: 3,
            alignment: DEFAULT_ALIGNMENT,
            kvs: Vec::new(),
            tensors: Vec::new(),
            kv_index: HashMap::new(),
            names: HashSet::new(),
        }
    }

    /// Overrides the version field (default 3). The layout is the same for 2 and 3; other
    /// values write files the reader rejects.
    pub fn version(&mut self, version: u32) -> &mut Self {
        self.version = version;
        self
    }

    /// Sets `general.alignment` (see the module docs for invalid values).
    pub fn alignment(&mut self, n: u32) -> &mut Self {
        self.kv("general.alignment", OwnedValue::U32(n))
    }

    /// Sets `key` to `value`, replacing an earlier value in place.
    pub fn kv(&mut self, key: impl Into<String>, value: OwnedValue) -> &mut Self {
        let key = key.into();
        if key == "general.alignment" {
            if let OwnedValue::U32(n) = value {
                let n = n as usize;
                if n.is_power_of_two() && n <= MAX_ALIGNMENT {
                    self.alignment = n;
                }
            }
        }
        match self.kv_index.get(&key).and_then(|&i| self.kvs.get_mut(i)) {
            Some(slot) => slot.1 = value,
            None => {
                self.kv_index.insert(key.clone(), self.kvs.len());
                self.kvs.push((key, value));
            }
        }
        self
    }

    /// Sets a u32 key.
    pub fn kv_u32(&mut self, key: impl Into<String>, v: u32) -> &mut Self {
        self.kv(key, OwnedValue::U32(v))
    }

    /// Sets a u64 key.
    pub fn kv_u64(&mut self, key: impl Into<String>, v: u64) -> &mut Self {
        self.kv(key, OwnedValue::U64(v))
    }

    /// Sets an i32 key.
    pub fn kv_i32(&mut self, key: impl Into<String>, v: i32) -> &mut Self {
        self.kv(key, OwnedValue::I32(v))
    }

    /// Sets an f32 key.
    pub fn kv_f32(&mut self, key: impl Into<String>, v: f32) -> &mut Self {
        self.kv(key, OwnedValue::F32(v))
    }

    /// Sets a bool key.
    pub fn kv_bool(&mut self, key: impl Into<String>, v: bool) -> &mut Self {
        self.kv(key, OwnedValue::Bool(v))
    }

    /// Sets a string key.
    pub fn kv_str(&mut self, key: impl Into<String>, v: &str) -> &mut Self {
        self.kv(key, OwnedValue::Str(v.to_owned()))
    }

    /// Sets a string-array key.
    pub fn kv_array_str(&mut self, key: impl Into<String>, v: &[&str]) -> &mut Self {
        let items = v.iter().map(|s| (*s).to_owned()).collect();
        self.kv(key, OwnedValue::Array(OwnedArray::Str(items)))
    }

    /// Sets an f32-array key.
    pub fn kv_array_f32(&mut self, key: impl Into<String>, v: &[f32]) -> &mut Self {
        self.kv(key, OwnedValue::Array(OwnedArray::F32(v.to_vec())))
    }

    /// Sets an i32-array key.
    pub fn kv_array_i32(&mut self, key: impl Into<String>, v: &[i32]) -> &mut Self {
        self.kv(key, OwnedValue::Array(OwnedArray::I32(v.to_vec())))
    }

    /// Sets a u32-array key.
    pub fn kv_array_u32(&mut self, key: impl Into<String>, v: &[u32]) -> &mut Self {
        self.kv(key, OwnedValue::Array(OwnedArray::U32(v.to_vec())))
    }

    /// Adds a tensor with its bytes; `dims` are `ne0..` (row length first).
    pub fn tensor(
        &mut self,
        name: impl Into<String>,
        ty: GgmlType,
        dims: &[u64],
        bytes: Vec<u8>,
    ) -> Result<&mut Self, GgufWriteError> {
        let name = name.into();
        let size = self.check_tensor(&name, ty, dims)?;
        if bytes.len() as u64 != size {
            return Err(GgufWriteError::ByteLength {
                name,
                expected: size,
                got: bytes.len() as u64,
            });
        }
        self.push(name, ty, dims, size, Source::Owned(bytes));
        Ok(self)
    }

    /// Adds a tensor whose bytes `write` produces during [`GgufWriter::write_to`]. It must
    /// write exactly the size the shape and type need ([`GgufWriter::tensor_size`]), else the
    /// write fails with [`GgufWriteError::SourceLength`]. It runs once per write.
    pub fn tensor_with(
        &mut self,
        name: impl Into<String>,
        ty: GgmlType,
        dims: &[u64],
        write: impl FnMut(&mut dyn Write) -> io::Result<()> + 'static,
    ) -> Result<&mut Self, GgufWriteError> {
        let name = name.into();
        let size = self.check_tensor(&name, ty, dims)?;
        self.push(name, ty, dims, size, Source::Lazy(Box::new(write)));
        Ok(self)
    }

    fn push(&mut self, name: String, ty: GgmlType, dims: &[u64], size: u64, source: Source) {
        self.names.insert(name.clone());
        self.tensors.push(PendingTensor {
            name,
            ty,
            dims: dims.to_vec(),
            size,
            source,
        });
    }

    fn check_tensor(&self, name: &str, ty: GgmlType, dims: &[u64]) -> Result<u64, GgufWriteError> {
        if self.names.contains(name) {
            return Err(GgufWriteError::DuplicateTensor {
                name: name.to_owned(),
            });
        }
        Self::tensor_size(ty, dims).map_err(|e| e.named(name))
    }

    /// Bytes a tensor of type `ty` and shape `dims` takes (errors carry an empty name).
    pub fn tensor_size(ty: GgmlType, dims: &[u64]) -> Result<u64, GgufWriteError> {
        let name = String::new();
        if dims.is_empty() || dims.len() > MAX_DIMS {
            return Err(GgufWriteError::BadDimCount {
                name,
                n_dims: dims.len(),
            });
        }
        if let Some(dim) = dims.iter().position(|&d| d == 0) {
            return Err(GgufWriteError::ZeroDim { name, dim });
        }
        let ne0 = dims[0]; // dims is not empty, checked above.
        if !ne0.is_multiple_of(ty.block_size() as u64) {
            return Err(GgufWriteError::NotBlockAligned { name, ne0, ty });
        }
        let n_elements = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
        let size = n_elements
            .filter(|&n| n <= i64::MAX as u64)
            .and_then(|n| (n / ty.block_size() as u64).checked_mul(ty.type_size() as u64));
        size.ok_or(GgufWriteError::ShapeOverflow { name })
    }

    /// Number of tensors added so far.
    pub fn n_tensors(&self) -> usize {
        self.tensors.len()
    }

    /// Each tensor's offset in the data region, and the padded size of the data region.
    fn layout(&self) -> (Vec<u64>, u64) {
        let align = self.alignment as u64;
        let mut offsets = Vec::with_capacity(self.tensors.len());
        let mut end = 0u64;
        for t in &self.tensors {
            let offset = end.next_multiple_of(align);
            offsets.push(offset);
            end = offset + t.size;
        }
        (offsets, end.next_multiple_of(align))
    }

    /// Header, key/value table, tensor-info table and padding up to the data region.
    fn metadata(&self, offsets: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.kvs.len() as u64).to_le_bytes());
        for (key, value) in &self.kvs {
            value::encode_str(key, &mut out);
            out.extend_from_slice(&(value.ty() as u32).to_le_bytes());
            value.encode(&mut out);
        }
        for (t, offset) in self.tensors.iter().zip(offsets) {
            value::encode_str(&t.name, &mut out);
            out.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&(t.ty as u32).to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
        }
        out.resize(out.len().next_multiple_of(self.alignment), 0);
        out
    }

    /// Total file size in bytes.
    pub fn file_len(&self) -> u64 {
        let (offsets, data_len) = self.layout();
        self.metadata(&offsets).len() as u64 + data_len
    }

    /// Streams the file into `out`; returns the bytes written. Lazy tensor sources run now.
    pub fn write_to(&mut self, mut out: impl Write) -> Result<u64, GgufWriteError> {
        let (offsets, data_len) = self.layout();
        let meta = self.metadata(&offsets);
        out.write_all(&meta)?;
        let mut pos = 0u64; // within the data region
        for (t, &offset) in self.tensors.iter_mut().zip(&offsets) {
            write_zeros(&mut out, offset - pos)?;
            let written = match &mut t.source {
                Source::Owned(bytes) => {
                    out.write_all(bytes)?;
                    bytes.len() as u64
                }
                Source::Lazy(write) => {
                    let mut counted = Counting {
                        inner: &mut out,
                        n: 0,
                    };
                    write(&mut counted)?;
                    counted.n
                }
            };
            if written != t.size {
                let name = t.name.clone();
                return Err(GgufWriteError::SourceLength {
                    name,
                    expected: t.size,
                    written,
                });
            }
            pos = offset + t.size;
        }
        write_zeros(&mut out, data_len - pos)?;
        out.flush()?;
        Ok(meta.len() as u64 + data_len)
    }

    /// The whole file in memory.
    ///
    /// # Panics
    /// If a lazy tensor source fails or writes the wrong number of bytes; use
    /// [`GgufWriter::write_to`] to get that error instead.
    pub fn to_bytes(&mut self) -> Vec<u8> {
        let mut out = Vec::with_capacity(usize::try_from(self.file_len()).unwrap_or(0));
        if let Err(e) = self.write_to(&mut out) {
            panic!("GgufWriter::to_bytes: {e}");
        }
        out
    }
}

impl GgufWriteError {
    /// Puts the tensor's name into an error made by [`GgufWriter::tensor_size`].
    fn named(self, tensor: &str) -> Self {
        let n = tensor.to_owned();
        match self {
            Self::BadDimCount { n_dims, .. } => Self::BadDimCount { name: n, n_dims },
            Self::ZeroDim { dim, .. } => Self::ZeroDim { name: n, dim },
            Self::NotBlockAligned { ne0, ty, .. } => Self::NotBlockAligned { name: n, ne0, ty },
            Self::ShapeOverflow { .. } => Self::ShapeOverflow { name: n },
            other => other,
        }
    }
}

fn write_zeros(out: &mut impl Write, n: u64) -> io::Result<()> {
    io::copy(&mut io::repeat(0).take(n), out).map(|_| ())
}

/// Counts the bytes a lazy source writes.
struct Counting<'w, W: Write> {
    inner: &'w mut W,
    n: u64,
}

impl<W: Write> Write for Counting<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests;

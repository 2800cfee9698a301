//! The GGUF reader's error type and the small `Copy` helpers that give it context.

use core::fmt;

use super::value::ValueType;

/// Longest name an [`ErrName`] keeps, in bytes; longer names are cut at a char boundary.
pub const ERR_NAME_CAP: usize = 48;

/// A key or tensor name carried inside an error, without allocation.
///
/// Keeps at most [`ERR_NAME_CAP`] bytes, cut at a UTF-8 boundary, and remembers whether it
/// was cut; [`fmt::Display`] then ends it with `…`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrName {
    buf: [u8; ERR_NAME_CAP],
    len: u8,
    truncated: bool,
}

impl ErrName {
    /// The empty name.
    pub const EMPTY: ErrName = ErrName {
        buf: [0; ERR_NAME_CAP],
        len: 0,
        truncated: false,
    };

    /// Copies `name`, cutting it to [`ERR_NAME_CAP`] bytes at a char boundary.
    pub fn new(name: &str) -> Self {
        let mut cut = name.len().min(ERR_NAME_CAP);
        while !name.is_char_boundary(cut) {
            cut -= 1; // cut > 0 here: index 0 is always a char boundary.
        }
        let mut out = Self::EMPTY;
        for (dst, src) in out.buf.iter_mut().zip(name.as_bytes().iter().take(cut)) {
            *dst = *src;
        }
        out.len = cut as u8; // cut <= ERR_NAME_CAP = 48 fits in u8.
        out.truncated = cut < name.len();
        out
    }

    /// The kept part of the name.
    pub fn as_str(&self) -> &str {
        let bytes = self.buf.get(..usize::from(self.len)).unwrap_or(&[]);
        // Built from a &str cut at a char boundary, so this never fails; fall back to "" anyway.
        core::str::from_utf8(bytes).unwrap_or("")
    }

    /// Whether the original name was longer than what is kept.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }
}

impl fmt::Display for ErrName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())?;
        if self.truncated {
            f.write_str("…")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ErrName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// Which structure the reader was reading when the buffer ended.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// The 4-byte magic.
    Magic,
    /// The u32 version.
    Version,
    /// The u64 tensor count.
    TensorCount,
    /// The u64 key/value count.
    KvCount,
    /// The key/value table as a whole: fewer bytes remain than its declared entries need.
    KvTable,
    /// The tensor-info table as a whole: fewer bytes remain than its declared entries need.
    TensorTable,
    /// A u64 string length.
    StringLength,
    /// The bytes of a string.
    StringBytes,
    /// The u32 type tag of a value.
    ValueType,
    /// A scalar value.
    Value,
    /// The u32 element type of an array.
    ArrayType,
    /// The u64 element count of an array.
    ArrayLength,
    /// The elements of an array.
    ArrayData,
    /// A tensor's u32 dimension count.
    TensorNDims,
    /// A tensor's u64 dimensions.
    TensorDims,
    /// A tensor's u32 type.
    TensorType,
    /// A tensor's u64 data offset.
    TensorOffset,
}

/// The coarse class of a [`GgufError`], for callers that act on the class, not the detail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The buffer ends early (an incomplete download or copy).
    Truncated,
    /// A well-formed file this reader does not support (version, endianness, nesting).
    Unsupported,
    /// The bytes contradict the format or themselves.
    Malformed,
    /// A key is present but holds a type or value the caller cannot use.
    WrongType,
}

/// Why a buffer is not a GGUF file this reader accepts, or why a typed lookup failed.
///
/// Offsets are absolute byte offsets into the parsed buffer. Tensor `index` is the position
/// in the tensor-info table; tensor `offset`s are relative to the data region.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GgufError {
    /// The file does not start with the bytes `GGUF`.
    BadMagic {
        /// The first four bytes found.
        found: [u8; 4],
    },
    /// The version is not 2 or 3 (version 1 used 32-bit counts and is not read).
    UnsupportedVersion {
        /// The version field as read.
        version: u32,
    },
    /// The version reads as 2 or 3 only when byte-swapped: a big-endian file.
    BigEndian {
        /// The version field as read (little-endian).
        version: u32,
    },
    /// The buffer ends before a structure it declares.
    Truncated {
        /// What was being read.
        what: Field,
        /// Where that read started.
        offset: usize,
    },
    /// The tensor count is above [`super::MAX_TENSORS`].
    TooManyTensors {
        /// The declared count.
        count: u64,
    },
    /// The key/value count is above [`super::MAX_KVS`].
    TooManyKvs {
        /// The declared count.
        count: u64,
    },
    /// A string length is above [`super::MAX_STRING_LEN`] (corrupt rather than truncated).
    StringTooLong {
        /// The declared length.
        len: u64,
        /// Offset of the length field.
        offset: usize,
    },
    /// A string is not valid UTF-8.
    InvalidUtf8 {
        /// Offset of the string's first byte.
        offset: usize,
    },
    /// A value's type tag is not a GGUF value type.
    UnknownValueType {
        /// The key being read.
        key: ErrName,
        /// The tag found.
        ty: u32,
        /// Offset of the tag.
        offset: usize,
    },
    /// An array's element type tag is not a GGUF value type.
    UnknownArrayType {
        /// The key being read.
        key: ErrName,
        /// The tag found.
        ty: u32,
        /// Offset of the tag.
        offset: usize,
    },
    /// An array of arrays; this reader does not support nesting.
    NestedArray {
        /// The key being read.
        key: ErrName,
        /// Offset of the element type tag.
        offset: usize,
    },
    /// An array's byte size (count times element size) overflows.
    ArrayTooLong {
        /// The key being read.
        key: ErrName,
        /// The declared element count.
        len: u64,
        /// Offset of the count field.
        offset: usize,
    },
    /// A bool byte other than 0 or 1.
    InvalidBool {
        /// The key being read.
        key: ErrName,
        /// The byte found.
        byte: u8,
        /// Its offset.
        offset: usize,
    },
    /// The same key appears twice.
    DuplicateKey {
        /// The key.
        key: ErrName,
        /// Index of its second occurrence in the key/value table.
        index: usize,
    },
    /// A key holds a type the caller (or the format, for `general.alignment`) does not accept.
    WrongType {
        /// The key.
        key: ErrName,
        /// What was expected, in words (`"u32"`, `"integer"`, `"string"`, …).
        expected: &'static str,
        /// The type found.
        found: ValueType,
    },
    /// An integer key's value does not fit the requested type (a negative count, say).
    IntOutOfRange {
        /// The key.
        key: ErrName,
        /// The value found.
        value: i128,
    },
    /// `general.alignment` is 0, not a power of two, or above 1 MiB.
    BadAlignment {
        /// The value found.
        alignment: u32,
    },
    /// A tensor's dimension count is 0 or above 4.
    BadDimCount {
        /// The tensor.
        tensor: ErrName,
        /// Its index in the table.
        index: usize,
        /// The count found.
        n_dims: u32,
    },
    /// A tensor's type id is not in [`crate::quant::GgmlType`].
    UnknownTensorType {
        /// The tensor.
        tensor: ErrName,
        /// Its index in the table.
        index: usize,
        /// The type id found.
        ty: u32,
    },
    /// A tensor dimension is 0 (empty tensors are rejected).
    ZeroDim {
        /// The tensor.
        tensor: ErrName,
        /// Its index in the table.
        index: usize,
        /// Which dimension (0 = ne0).
        dim: usize,
    },
    /// A tensor's element count exceeds `i64::MAX` or its byte size overflows `usize`.
    ShapeOverflow {
        /// The tensor.
        tensor: ErrName,
        /// Its index in the table.
        index: usize,
    },
    /// A tensor's row length (ne0) is not a whole number of blocks of its type.
    RowNotBlockAligned {
        /// The tensor.
        tensor: ErrName,
        /// Its index in the table.
        index: usize,
        /// The row length.
        ne0: u64,
        /// The type's block size.
        block: usize,
    },
    /// A tensor's offset is not a multiple of the file alignment.
    MisalignedTensor {
        /// The tensor.
        tensor: ErrName,
        /// Its index in the table.
        index: usize,
        /// Its offset within the data region.
        offset: u64,
        /// The file alignment.
        alignment: usize,
    },
    /// A tensor's bytes run past the end of the buffer.
    TensorOutOfRange {
        /// The tensor.
        tensor: ErrName,
        /// Its index in the table.
        index: usize,
        /// Its offset within the data region.
        offset: u64,
        /// Its size in bytes.
        size: u64,
        /// Bytes the data region actually holds.
        available: u64,
    },
    /// Two tensors' byte ranges overlap.
    OverlappingTensors {
        /// One tensor.
        first: ErrName,
        /// The other tensor.
        second: ErrName,
    },
    /// More than [`super::MAX_UNSORTED_TENSORS`] tensors whose offsets do not increase in
    /// table order (checking them for overlaps would take too long).
    UnsortedTensorTable {
        /// The number of tensors.
        count: usize,
    },
    /// The same tensor name appears twice.
    DuplicateTensor {
        /// The name.
        tensor: ErrName,
        /// Index of its second occurrence.
        index: usize,
    },
}

impl GgufError {
    /// The coarse class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Truncated { .. } => ErrorKind::Truncated,
            Self::UnsupportedVersion { .. }
            | Self::BigEndian { .. }
            | Self::NestedArray { .. }
            | Self::UnsortedTensorTable { .. } => ErrorKind::Unsupported,
            Self::WrongType { .. } | Self::IntOutOfRange { .. } => ErrorKind::WrongType,
            _ => ErrorKind::Malformed,
        }
    }
}

impl fmt::Display for GgufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadMagic { found } => write!(f, "not a GGUF file (magic {found:02x?})"),
            Self::UnsupportedVersion { version } => write!(f, "unsupported GGUF version {version}"),
            Self::BigEndian { version } => {
                write!(
                    f,
                    "big-endian GGUF (version field {version:#x}) is not supported"
                )
            }
            Self::Truncated { what, offset } => {
                write!(f, "file truncated while reading {what:?} at byte {offset}")
            }
            Self::TooManyTensors { count } => write!(f, "tensor count {count} is too large"),
            Self::TooManyKvs { count } => write!(f, "key/value count {count} is too large"),
            Self::StringTooLong { len, offset } => {
                write!(f, "string length {len} at byte {offset} is absurd")
            }
            Self::InvalidUtf8 { offset } => write!(f, "string at byte {offset} is not UTF-8"),
            Self::UnknownValueType { key, ty, offset } => {
                write!(f, "key {key}: unknown value type {ty} at byte {offset}")
            }
            Self::UnknownArrayType { key, ty, offset } => {
                write!(
                    f,
                    "key {key}: unknown array element type {ty} at byte {offset}"
                )
            }
            Self::NestedArray { key, offset } => {
                write!(
                    f,
                    "key {key}: nested array at byte {offset} is not supported"
                )
            }
            Self::ArrayTooLong { key, len, offset } => {
                write!(
                    f,
                    "key {key}: array length {len} at byte {offset} overflows"
                )
            }
            Self::InvalidBool { key, byte, offset } => {
                write!(f, "key {key}: bool byte {byte} at byte {offset}")
            }
            Self::DuplicateKey { key, index } => write!(f, "duplicate key {key} (entry {index})"),
            Self::WrongType {
                key,
                expected,
                found,
            } => {
                write!(f, "key {key}: expected {expected}, found {}", found.name())
            }
            Self::IntOutOfRange { key, value } => {
                write!(f, "key {key}: value {value} out of range")
            }
            Self::BadAlignment { alignment } => write!(f, "bad general.alignment {alignment}"),
            Self::BadDimCount {
                tensor,
                index,
                n_dims,
            } => {
                write!(
                    f,
                    "tensor {tensor} (#{index}): {n_dims} dimensions (1..=4 allowed)"
                )
            }
            Self::UnknownTensorType { tensor, index, ty } => {
                write!(f, "tensor {tensor} (#{index}): unknown type {ty}")
            }
            Self::ZeroDim { tensor, index, dim } => {
                write!(f, "tensor {tensor} (#{index}): dimension {dim} is 0")
            }
            Self::ShapeOverflow { tensor, index } => {
                write!(f, "tensor {tensor} (#{index}): shape overflows")
            }
            Self::RowNotBlockAligned {
                tensor,
                index,
                ne0,
                block,
            } => write!(
                f,
                "tensor {tensor} (#{index}): row length {ne0} is not a multiple of block {block}"
            ),
            Self::MisalignedTensor {
                tensor,
                index,
                offset,
                alignment,
            } => write!(
                f,
                "tensor {tensor} (#{index}): offset {offset} is not a multiple of {alignment}"
            ),
            Self::TensorOutOfRange {
                tensor,
                index,
                offset,
                size,
                available,
            } => write!(
                f,
                "tensor {tensor} (#{index}): bytes {offset}..+{size} past the data region \
                 ({available} bytes)"
            ),
            Self::OverlappingTensors { first, second } => {
                write!(f, "tensors {first} and {second} overlap")
            }
            Self::UnsortedTensorTable { count } => {
                write!(
                    f,
                    "{count} tensors out of offset order (overlap check limited)"
                )
            }
            Self::DuplicateTensor { tensor, index } => {
                write!(f, "duplicate tensor name {tensor} (#{index})")
            }
        }
    }
}

impl core::error::Error for GgufError {}

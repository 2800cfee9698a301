//! Owned metadata values for the writer, and their GGUF encoding.

use glimmer_core::gguf::{Value, ValueType};

/// An owned metadata value, mirroring [`Value`].
#[derive(Clone, Debug, PartialEq)]
pub enum OwnedValue {
    /// Unsigned 8-bit integer.
    U8(u8),
    /// Signed 8-bit integer.
    I8(i8),
    /// Unsigned 16-bit integer.
    U16(u16),
    /// Signed 16-bit integer.
    I16(i16),
    /// Unsigned 32-bit integer.
    U32(u32),
    /// Signed 32-bit integer.
    I32(i32),
    /// 32-bit float.
    F32(f32),
    /// Boolean.
    Bool(bool),
    /// String.
    Str(String),
    /// Array of one element type.
    Array(OwnedArray),
    /// Unsigned 64-bit integer.
    U64(u64),
    /// Signed 64-bit integer.
    I64(i64),
    /// 64-bit float.
    F64(f64),
}

/// An owned array value: one `Vec` per element type, so arrays are homogeneous by
/// construction. Nested arrays are not representable (the reader rejects them).
#[derive(Clone, Debug, PartialEq)]
pub enum OwnedArray {
    /// `u8` elements.
    U8(Vec<u8>),
    /// `i8` elements.
    I8(Vec<i8>),
    /// `u16` elements.
    U16(Vec<u16>),
    /// `i16` elements.
    I16(Vec<i16>),
    /// `u32` elements.
    U32(Vec<u32>),
    /// `i32` elements.
    I32(Vec<i32>),
    /// `f32` elements.
    F32(Vec<f32>),
    /// `bool` elements.
    Bool(Vec<bool>),
    /// String elements.
    Str(Vec<String>),
    /// `u64` elements.
    U64(Vec<u64>),
    /// `i64` elements.
    I64(Vec<i64>),
    /// `f64` elements.
    F64(Vec<f64>),
}

impl OwnedValue {
    /// The GGUF type tag of this value.
    pub fn ty(&self) -> ValueType {
        match self {
            Self::U8(_) => ValueType::U8,
            Self::I8(_) => ValueType::I8,
            Self::U16(_) => ValueType::U16,
            Self::I16(_) => ValueType::I16,
            Self::U32(_) => ValueType::U32,
            Self::I32(_) => ValueType::I32,
            Self::F32(_) => ValueType::F32,
            Self::Bool(_) => ValueType::Bool,
            Self::Str(_) => ValueType::Str,
            Self::Array(_) => ValueType::Array,
            Self::U64(_) => ValueType::U64,
            Self::I64(_) => ValueType::I64,
            Self::F64(_) => ValueType::F64,
        }
    }

    /// Appends the value's encoding (without its type tag) to `out`.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Self::U8(v) => out.push(*v),
            Self::I8(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::U16(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::I16(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::U32(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::I32(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::F32(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::Bool(v) => out.push(u8::from(*v)),
            Self::Str(s) => encode_str(s, out),
            Self::Array(a) => a.encode(out),
            Self::U64(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::I64(v) => out.extend_from_slice(&v.to_le_bytes()),
            Self::F64(v) => out.extend_from_slice(&v.to_le_bytes()),
        }
    }
}

impl OwnedArray {
    /// The element type tag.
    pub fn elem_type(&self) -> ValueType {
        match self {
            Self::U8(_) => ValueType::U8,
            Self::I8(_) => ValueType::I8,
            Self::U16(_) => ValueType::U16,
            Self::I16(_) => ValueType::I16,
            Self::U32(_) => ValueType::U32,
            Self::I32(_) => ValueType::I32,
            Self::F32(_) => ValueType::F32,
            Self::Bool(_) => ValueType::Bool,
            Self::Str(_) => ValueType::Str,
            Self::U64(_) => ValueType::U64,
            Self::I64(_) => ValueType::I64,
            Self::F64(_) => ValueType::F64,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Self::U8(v) => v.len(),
            Self::I8(v) => v.len(),
            Self::U16(v) => v.len(),
            Self::I16(v) => v.len(),
            Self::U32(v) => v.len(),
            Self::I32(v) => v.len(),
            Self::F32(v) => v.len(),
            Self::Bool(v) => v.len(),
            Self::Str(v) => v.len(),
            Self::U64(v) => v.len(),
            Self::I64(v) => v.len(),
            Self::F64(v) => v.len(),
        }
    }

    /// Whether the array is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends element type, count and elements to `out`.
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.elem_type() as u32).to_le_bytes());
        out.extend_from_slice(&(self.len() as u64).to_le_bytes());
        fn each<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N], out: &mut Vec<u8>) {
            for &x in v {
                out.extend_from_slice(&f(x));
            }
        }
        match self {
            Self::U8(v) => out.extend_from_slice(v),
            Self::I8(v) => each(v, i8::to_le_bytes, out),
            Self::U16(v) => each(v, u16::to_le_bytes, out),
            Self::I16(v) => each(v, i16::to_le_bytes, out),
            Self::U32(v) => each(v, u32::to_le_bytes, out),
            Self::I32(v) => each(v, i32::to_le_bytes, out),
            Self::F32(v) => each(v, f32::to_le_bytes, out),
            Self::Bool(v) => out.extend(v.iter().map(|&b| u8::from(b))),
            Self::Str(v) => v.iter().for_each(|s| encode_str(s, out)),
            Self::U64(v) => each(v, u64::to_le_bytes, out),
            Self::I64(v) => each(v, i64::to_le_bytes, out),
            Self::F64(v) => each(v, f64::to_le_bytes, out),
        }
    }
}

/// Appends a GGUF string (u64 length, bytes).
pub(crate) fn encode_str(s: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Copies every element of the fixed-size array `$a` into the matching `OwnedArray` variant.
macro_rules! owned_fixed {
    ($a:expr, $($t:ident),*) => {
        match $a.elem_type() {
            $(ValueType::$t => OwnedArray::$t(
                $a.iter().filter_map(|v| if let Value::$t(x) = v { Some(x) } else { None }).collect(),
            ),)*
            ValueType::Str => OwnedArray::Str($a.strs().map(str::to_owned).collect()),
            // The reader never yields nested arrays.
            ValueType::Array => OwnedArray::U8(Vec::new()),
        }
    };
}

impl From<Value<'_>> for OwnedValue {
    /// Copies a borrowed value out of a parsed file.
    fn from(v: Value<'_>) -> Self {
        match v {
            Value::U8(x) => Self::U8(x),
            Value::I8(x) => Self::I8(x),
            Value::U16(x) => Self::U16(x),
            Value::I16(x) => Self::I16(x),
            Value::U32(x) => Self::U32(x),
            Value::I32(x) => Self::I32(x),
            Value::F32(x) => Self::F32(x),
            Value::Bool(x) => Self::Bool(x),
            Value::Str(s) => Self::Str(s.to_owned()),
            Value::U64(x) => Self::U64(x),
            Value::I64(x) => Self::I64(x),
            Value::F64(x) => Self::F64(x),
            Value::Array(a) => Self::Array(owned_fixed!(
                a, U8, I8, U16, I16, U32, I32, F32, Bool, U64, I64, F64
            )),
        }
    }
}

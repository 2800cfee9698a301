//! Metadata values: the type tags, borrowed values and zero-copy array views.

use super::cursor::Cursor;
use super::error::{ErrName, Field, GgufError};

/// The type tag of a GGUF metadata value, with the ids files store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ValueType {
    /// Unsigned 8-bit integer.
    U8 = 0,
    /// Signed 8-bit integer.
    I8 = 1,
    /// Unsigned 16-bit integer.
    U16 = 2,
    /// Signed 16-bit integer.
    I16 = 3,
    /// Unsigned 32-bit integer.
    U32 = 4,
    /// Signed 32-bit integer.
    I32 = 5,
    /// 32-bit IEEE float.
    F32 = 6,
    /// Boolean stored as one byte, 0 or 1.
    Bool = 7,
    /// UTF-8 string: u64 length, then the bytes.
    Str = 8,
    /// Array: u32 element type, u64 count, then the elements.
    Array = 9,
    /// Unsigned 64-bit integer.
    U64 = 10,
    /// Signed 64-bit integer.
    I64 = 11,
    /// 64-bit IEEE float.
    F64 = 12,
}

impl ValueType {
    /// The type with tag `id`, or `None` for an unknown tag.
    pub fn from_u32(id: u32) -> Option<Self> {
        Some(match id {
            0 => Self::U8,
            1 => Self::I8,
            2 => Self::U16,
            3 => Self::I16,
            4 => Self::U32,
            5 => Self::I32,
            6 => Self::F32,
            7 => Self::Bool,
            8 => Self::Str,
            9 => Self::Array,
            10 => Self::U64,
            11 => Self::I64,
            12 => Self::F64,
            _ => return None,
        })
    }

    /// Bytes per value for fixed-size types; `None` for strings and arrays.
    pub const fn fixed_size(self) -> Option<usize> {
        match self {
            Self::U8 | Self::I8 | Self::Bool => Some(1),
            Self::U16 | Self::I16 => Some(2),
            Self::U32 | Self::I32 | Self::F32 => Some(4),
            Self::U64 | Self::I64 | Self::F64 => Some(8),
            Self::Str | Self::Array => None,
        }
    }

    /// A short lowercase name (`"u32"`, `"string"`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Self::U8 => "u8",
            Self::I8 => "i8",
            Self::U16 => "u16",
            Self::I16 => "i16",
            Self::U32 => "u32",
            Self::I32 => "i32",
            Self::F32 => "f32",
            Self::Bool => "bool",
            Self::Str => "string",
            Self::Array => "array",
            Self::U64 => "u64",
            Self::I64 => "i64",
            Self::F64 => "f64",
        }
    }
}

/// One metadata value, borrowed from the file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
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
    /// UTF-8 string.
    Str(&'a str),
    /// Array of values of one type.
    Array(ArrayView<'a>),
    /// Unsigned 64-bit integer.
    U64(u64),
    /// Signed 64-bit integer.
    I64(i64),
    /// 64-bit float.
    F64(f64),
}

impl<'a> Value<'a> {
    /// The value's type tag.
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

    /// The value as an integer, for any of the eight integer types.
    pub fn as_int(&self) -> Option<i128> {
        Some(match *self {
            Self::U8(v) => v.into(),
            Self::I8(v) => v.into(),
            Self::U16(v) => v.into(),
            Self::I16(v) => v.into(),
            Self::U32(v) => v.into(),
            Self::I32(v) => v.into(),
            Self::U64(v) => v.into(),
            Self::I64(v) => v.into(),
            _ => return None,
        })
    }

    /// The value as a float, for `F32` and `F64` (narrowed).
    pub fn as_f32(&self) -> Option<f32> {
        match *self {
            Self::F32(v) => Some(v),
            Self::F64(v) => Some(v as f32),
            _ => None,
        }
    }

    /// The string, for `Str`.
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// A zero-copy view of an array value: its element type, count and raw element bytes.
///
/// Arrays are validated when the file is parsed (sizes, UTF-8 of every string, bool bytes),
/// so reading them back cannot fail. Fixed-size elements are read in O(1); string elements
/// are variable-length, so [`ArrayView::get`] walks from the start (use [`ArrayView::iter`]
/// or [`ArrayView::strs`] to visit them all in one pass).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayView<'a> {
    elem: ValueType,
    len: usize,
    bytes: &'a [u8],
}

impl<'a> ArrayView<'a> {
    /// The element type (never `Array`: nested arrays are rejected at parse time).
    pub fn elem_type(&self) -> ValueType {
        self.elem
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The raw little-endian element bytes (for strings: each u64 length and its bytes).
    pub fn raw_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// All elements in order.
    pub fn iter(&self) -> ArrayIter<'a> {
        ArrayIter {
            view: *self,
            cursor: Cursor::new(self.bytes, 0),
            next: 0,
        }
    }

    /// Element `i`: O(1) for fixed-size elements, O(i) for strings.
    pub fn get(&self, i: usize) -> Option<Value<'a>> {
        if i >= self.len {
            return None;
        }
        match self.elem.fixed_size() {
            Some(size) => {
                let start = i.checked_mul(size)?;
                let mut cur = Cursor::new(self.bytes, start);
                read_scalar(&mut cur, self.elem, ErrName::EMPTY).ok()
            }
            None => self.iter().nth(i),
        }
    }

    /// The strings of a string array, in order; empty for any other element type.
    pub fn strs(&self) -> StrIter<'a> {
        let view = if self.elem == ValueType::Str {
            *self
        } else {
            EMPTY_STR_ARRAY
        };
        StrIter(view.iter())
    }

    /// Element `i` of a `F32` (or `F64`, narrowed) array; `None` for other types or `i` out
    /// of range.
    pub fn f32_at(&self, i: usize) -> Option<f32> {
        self.get(i)?.as_f32()
    }

    /// Element `i` of an integer array when it fits in `i32`; `None` for non-integer types,
    /// values out of `i32` range, or `i` out of range.
    pub fn i32_at(&self, i: usize) -> Option<i32> {
        i32::try_from(self.get(i)?.as_int()?).ok()
    }

    /// Element `i` of an integer array when it fits in `u32`; `None` otherwise.
    pub fn u32_at(&self, i: usize) -> Option<u32> {
        u32::try_from(self.get(i)?.as_int()?).ok()
    }
}

const EMPTY_STR_ARRAY: ArrayView<'static> = ArrayView {
    elem: ValueType::Str,
    len: 0,
    bytes: &[],
};

/// Iterator over the elements of an [`ArrayView`].
#[derive(Clone, Debug)]
pub struct ArrayIter<'a> {
    view: ArrayView<'a>,
    cursor: Cursor<'a>,
    next: usize,
}

impl<'a> Iterator for ArrayIter<'a> {
    type Item = Value<'a>;

    fn next(&mut self) -> Option<Value<'a>> {
        if self.next >= self.view.len {
            return None;
        }
        self.next += 1;
        let value = if self.view.elem == ValueType::Str {
            self.cursor.str().map(Value::Str)
        } else {
            read_scalar(&mut self.cursor, self.view.elem, ErrName::EMPTY)
        };
        match value {
            Ok(v) => Some(v),
            Err(_) => {
                // Unreachable for a parsed file; end the walk rather than yield garbage.
                self.next = self.view.len;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.view.len.saturating_sub(self.next);
        (0, Some(left))
    }
}

/// Iterator over the strings of a string array (see [`ArrayView::strs`]).
#[derive(Clone, Debug)]
pub struct StrIter<'a>(ArrayIter<'a>);

impl<'a> Iterator for StrIter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        self.0.next()?.as_str()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

/// Reads one fixed-size value of type `ty`; `ty` must not be `Str` or `Array`.
fn read_scalar<'a>(
    cur: &mut Cursor<'a>,
    ty: ValueType,
    key: ErrName,
) -> Result<Value<'a>, GgufError> {
    let f = Field::Value;
    Ok(match ty {
        ValueType::U8 => Value::U8(u8::from_le_bytes(cur.array(f)?)),
        ValueType::I8 => Value::I8(i8::from_le_bytes(cur.array(f)?)),
        ValueType::U16 => Value::U16(u16::from_le_bytes(cur.array(f)?)),
        ValueType::I16 => Value::I16(i16::from_le_bytes(cur.array(f)?)),
        ValueType::U32 => Value::U32(u32::from_le_bytes(cur.array(f)?)),
        ValueType::I32 => Value::I32(i32::from_le_bytes(cur.array(f)?)),
        ValueType::F32 => Value::F32(f32::from_le_bytes(cur.array(f)?)),
        ValueType::U64 => Value::U64(u64::from_le_bytes(cur.array(f)?)),
        ValueType::I64 => Value::I64(i64::from_le_bytes(cur.array(f)?)),
        ValueType::F64 => Value::F64(f64::from_le_bytes(cur.array(f)?)),
        ValueType::Bool => {
            let offset = cur.pos();
            match cur.array::<1>(f)? {
                [0] => Value::Bool(false),
                [1] => Value::Bool(true),
                [byte] => return Err(GgufError::InvalidBool { key, byte, offset }),
            }
        }
        // Callers handle these two; reaching here means a caller bug, reported as a type error.
        ValueType::Str | ValueType::Array => {
            return Err(GgufError::WrongType {
                key,
                expected: "scalar",
                found: ty,
            })
        }
    })
}

/// Reads one value of type `ty` for key `key`.
///
/// With `check`, every array element is validated (UTF-8 of strings, bool bytes); without,
/// array elements are only bounds-checked, which is enough to re-walk a parsed file.
pub(crate) fn read_value<'a>(
    cur: &mut Cursor<'a>,
    ty: ValueType,
    key: &str,
    check: bool,
) -> Result<Value<'a>, GgufError> {
    match ty {
        ValueType::Str => cur.str().map(Value::Str),
        ValueType::Array => read_array(cur, key, check).map(Value::Array),
        _ => read_scalar(cur, ty, ErrName::new(key)),
    }
}

/// Reads an array header and its elements (validated when `check`).
fn read_array<'a>(
    cur: &mut Cursor<'a>,
    key: &str,
    check: bool,
) -> Result<ArrayView<'a>, GgufError> {
    let ty_offset = cur.pos();
    let tag = cur.u32(Field::ArrayType)?;
    let elem = ValueType::from_u32(tag).ok_or(GgufError::UnknownArrayType {
        key: ErrName::new(key),
        ty: tag,
        offset: ty_offset,
    })?;
    if elem == ValueType::Array {
        return Err(GgufError::NestedArray {
            key: ErrName::new(key),
            offset: ty_offset,
        });
    }
    let len_offset = cur.pos();
    let count = cur.u64(Field::ArrayLength)?;
    let too_long = GgufError::ArrayTooLong {
        key: ErrName::new(key),
        len: count,
        offset: len_offset,
    };
    // Every element takes at least this many bytes (a string at least its u64 length).
    let min_size = elem.fixed_size().unwrap_or(8) as u64;
    let min_bytes = count.checked_mul(min_size).ok_or(too_long)?;
    let len = usize::try_from(count).map_err(|_| too_long)?;
    cur.ensure_room(count, min_size, Field::ArrayData)?;
    let start = cur.pos();
    let bytes = match elem.fixed_size() {
        Some(_) => {
            let n = usize::try_from(min_bytes).map_err(|_| too_long)?;
            let bytes = cur.take(n, Field::ArrayData)?;
            if check && elem == ValueType::Bool {
                let key = ErrName::new(key);
                for (i, &byte) in bytes.iter().enumerate() {
                    if byte > 1 {
                        let offset = start.saturating_add(i);
                        return Err(GgufError::InvalidBool { key, byte, offset });
                    }
                }
            }
            bytes
        }
        None => {
            for _ in 0..len {
                if check {
                    cur.str()?;
                } else {
                    cur.skip_str()?;
                }
            }
            cur.since(start).ok_or(GgufError::Truncated {
                what: Field::ArrayData,
                offset: start,
            })?
        }
    };
    Ok(ArrayView { elem, len, bytes })
}

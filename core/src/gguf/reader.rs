//! [`Gguf`]: parsing and validating a whole file, then lookups over the validated tables.

use core::fmt;

use super::checks::{check_sorted, find_duplicate, find_overlap, SortedCheck};
use super::cursor::Cursor;
use super::error::{ErrName, Field, GgufError};
use super::tensor::{read_tensor_info, RawTensor, TensorInfo};
use super::value::{read_value, ArrayView, Value, ValueType};
use super::{DEFAULT_ALIGNMENT, MAGIC, MAX_ALIGNMENT, MAX_KVS, MAX_TENSORS, MAX_UNSORTED_TENSORS};

/// The key that sets the data alignment.
const ALIGNMENT_KEY: &str = "general.alignment";
/// Smallest key/value entry: empty key (u64 length), u32 tag, one-byte value.
const MIN_KV_BYTES: u64 = 8 + 4 + 1;
/// Smallest tensor-info entry: empty name, u32 n_dims, one u64 dim, u32 type, u64 offset.
const MIN_TENSOR_INFO_BYTES: u64 = 8 + 4 + 8 + 4 + 8;

/// A parsed, fully validated GGUF file borrowing its bytes.
///
/// [`Gguf::parse`] checks every structure up front; the lookups afterwards re-walk the
/// validated tables and cannot fail on structure. Lookups by name are linear scans.
#[derive(Clone, Copy)]
pub struct Gguf<'a> {
    data: &'a [u8],
    version: u32,
    n_kv: usize,
    n_tensors: usize,
    kv_start: usize,
    tensor_start: usize,
    data_offset: usize,
    alignment: usize,
}

impl fmt::Debug for Gguf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gguf")
            .field("len", &self.data.len())
            .field("version", &self.version)
            .field("n_kv", &self.n_kv)
            .field("n_tensors", &self.n_tensors)
            .field("alignment", &self.alignment)
            .field("data_offset", &self.data_offset)
            .finish()
    }
}

impl<'a> Gguf<'a> {
    /// Parses and validates a GGUF v2/v3 little-endian file.
    ///
    /// Checks, in file order: magic, version, counts (bounded by [`MAX_TENSORS`] and
    /// [`MAX_KVS`], and by the bytes left), every key/value entry (UTF-8, known types, array
    /// sizes, bool bytes, `general.alignment`), duplicate keys, every tensor-info entry
    /// (dimension count, type, shape, offset alignment), then each tensor's data range,
    /// duplicate tensor names and overlapping tensors.
    pub fn parse(data: &'a [u8]) -> Result<Self, GgufError> {
        let mut cur = Cursor::new(data, 0);
        let magic: [u8; 4] = cur.array(Field::Magic)?;
        if magic != MAGIC {
            return Err(GgufError::BadMagic { found: magic });
        }
        let version = cur.u32(Field::Version)?;
        match version {
            2 | 3 => {}
            v if matches!(v.swap_bytes(), 2 | 3) => return Err(GgufError::BigEndian { version }),
            _ => return Err(GgufError::UnsupportedVersion { version }),
        }
        let n_tensors_raw = cur.u64(Field::TensorCount)?;
        let n_kv_raw = cur.u64(Field::KvCount)?;
        let n_tensors = usize::try_from(n_tensors_raw)
            .ok()
            .filter(|&n| n <= MAX_TENSORS)
            .ok_or(GgufError::TooManyTensors {
                count: n_tensors_raw,
            })?;
        let n_kv = usize::try_from(n_kv_raw)
            .ok()
            .filter(|&n| n <= MAX_KVS)
            .ok_or(GgufError::TooManyKvs { count: n_kv_raw })?;

        cur.ensure_room(n_kv_raw, MIN_KV_BYTES, Field::KvTable)?;
        let kv_start = cur.pos();
        let mut alignment = DEFAULT_ALIGNMENT;
        for _ in 0..n_kv {
            let (key, value) = read_kv(&mut cur, true)?;
            if key == ALIGNMENT_KEY {
                alignment = check_alignment(value)?;
            }
        }
        let kvs = KvIter {
            cur: Cursor::new(data, kv_start),
            left: n_kv,
        };
        if let Some((_, second)) = find_duplicate(|| kvs.clone().map(|(k, _)| k.as_bytes())) {
            let key = kvs
                .clone()
                .nth(second)
                .map_or(ErrName::EMPTY, |(k, _)| ErrName::new(k));
            return Err(GgufError::DuplicateKey { key, index: second });
        }

        cur.ensure_room(n_tensors_raw, MIN_TENSOR_INFO_BYTES, Field::TensorTable)?;
        let tensor_start = cur.pos();
        for index in 0..n_tensors {
            read_tensor_info(&mut cur, index, alignment)?;
        }
        let table_end = cur.pos();
        let data_offset =
            table_end
                .checked_next_multiple_of(alignment)
                .ok_or(GgufError::Truncated {
                    what: Field::TensorTable,
                    offset: table_end,
                })?;

        let gguf = Gguf {
            data,
            version,
            n_kv,
            n_tensors,
            kv_start,
            tensor_start,
            data_offset,
            alignment,
        };
        gguf.check_tensor_data()?;
        Ok(gguf)
    }

    /// Checks data ranges, duplicate tensor names and overlaps; the table is already valid.
    fn check_tensor_data(&self) -> Result<(), GgufError> {
        let available = self.data.len().saturating_sub(self.data_offset) as u64;
        for (index, t) in self.raw_tensors().enumerate() {
            if t.offset
                .checked_add(t.size)
                .is_none_or(|end| end > available)
            {
                return Err(GgufError::TensorOutOfRange {
                    tensor: ErrName::new(t.name),
                    index,
                    offset: t.offset,
                    size: t.size,
                    available,
                });
            }
        }
        let name_at = |i: usize| {
            self.raw_tensors()
                .nth(i)
                .map_or(ErrName::EMPTY, |t| ErrName::new(t.name))
        };
        if let Some((_, second)) = find_duplicate(|| self.tensor_names()) {
            return Err(GgufError::DuplicateTensor {
                tensor: name_at(second),
                index: second,
            });
        }
        // Ranges were just checked to fit, so `offset + size` cannot overflow.
        let ranges = || {
            self.raw_tensors()
                .map(|t| (t.offset, t.offset.saturating_add(t.size)))
        };
        let overlap = match check_sorted(ranges()) {
            SortedCheck::Disjoint => None,
            SortedCheck::Overlap(first, second) => Some((first, second)),
            SortedCheck::Unsorted if self.n_tensors > MAX_UNSORTED_TENSORS => {
                return Err(GgufError::UnsortedTensorTable {
                    count: self.n_tensors,
                });
            }
            SortedCheck::Unsorted => find_overlap(ranges),
        };
        if let Some((first, second)) = overlap {
            return Err(GgufError::OverlappingTensors {
                first: name_at(first),
                second: name_at(second),
            });
        }
        Ok(())
    }

    /// The tensor names as raw bytes, skimming the validated table (no UTF-8 or shape
    /// checks): the cheap walk the duplicate-name check repeats.
    fn tensor_names(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let mut cur = Cursor::new(self.data, self.tensor_start);
        (0..self.n_tensors).map_while(move |_| {
            let len = usize::try_from(cur.u64(Field::StringLength).ok()?).ok()?;
            let name = cur.take(len, Field::StringBytes).ok()?;
            let n_dims = usize::try_from(cur.u32(Field::TensorNDims).ok()?).ok()?;
            // dims, then the u32 type and the u64 offset.
            let rest = n_dims.checked_mul(8)?.checked_add(4 + 8)?;
            cur.take(rest, Field::TensorDims).ok()?;
            Some(name)
        })
    }

    /// The format version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The data alignment: `general.alignment`, or 32 when absent.
    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// Number of key/value entries.
    pub fn n_kv(&self) -> usize {
        self.n_kv
    }

    /// Number of tensors.
    pub fn n_tensors(&self) -> usize {
        self.n_tensors
    }

    /// Absolute offset of the tensor data region (the end of the tensor table, aligned).
    ///
    /// For a file without tensors this may point past the end of the buffer.
    pub fn data_offset(&self) -> usize {
        self.data_offset
    }

    /// The whole file.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.data
    }

    /// All key/value entries in file order.
    pub fn kvs(&self) -> KvIter<'a> {
        KvIter {
            cur: Cursor::new(self.data, self.kv_start),
            left: self.n_kv,
        }
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<Value<'a>> {
        self.kvs().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// An integer key as `u64`: any of the eight integer types; a negative value is
    /// [`GgufError::IntOutOfRange`], any other type [`GgufError::WrongType`].
    pub fn get_u64(&self, key: &str) -> Result<Option<u64>, GgufError> {
        self.get_int(key)
    }

    /// An integer key as `u32`, like [`Gguf::get_u64`] but also rejecting values above
    /// `u32::MAX`.
    pub fn get_u32(&self, key: &str) -> Result<Option<u32>, GgufError> {
        self.get_int(key)
    }

    /// An integer key as `i64` (any integer type; values above `i64::MAX` are out of range).
    pub fn get_i64(&self, key: &str) -> Result<Option<i64>, GgufError> {
        self.get_int(key)
    }

    fn get_int<T: TryFrom<i128>>(&self, key: &str) -> Result<Option<T>, GgufError> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        let wrong = wrong_type(key, "integer", value);
        let int = value.as_int().ok_or(wrong)?;
        T::try_from(int)
            .map(Some)
            .map_err(|_| GgufError::IntOutOfRange {
                key: ErrName::new(key),
                value: int,
            })
    }

    /// A float key: `F32`, or `F64` narrowed to `f32`.
    pub fn get_f32(&self, key: &str) -> Result<Option<f32>, GgufError> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        value
            .as_f32()
            .map(Some)
            .ok_or(wrong_type(key, "float", value))
    }

    /// A bool key.
    pub fn get_bool(&self, key: &str) -> Result<Option<bool>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(value) => Err(wrong_type(key, "bool", value)),
        }
    }

    /// A string key.
    pub fn get_str(&self, key: &str) -> Result<Option<&'a str>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s)),
            Some(value) => Err(wrong_type(key, "string", value)),
        }
    }

    /// An array key.
    pub fn get_array(&self, key: &str) -> Result<Option<ArrayView<'a>>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(value) => Err(wrong_type(key, "array", value)),
        }
    }

    /// `general.architecture` (`"llama"`, `"gemma3"`, …).
    pub fn architecture(&self) -> Result<Option<&'a str>, GgufError> {
        self.get_str("general.architecture")
    }

    /// All tensors in table order.
    pub fn tensors(&self) -> TensorIter<'a> {
        TensorIter {
            raw: self.raw_tensors(),
            data: self.data,
            data_offset: self.data_offset,
        }
    }

    /// The tensor called `name`, if present.
    pub fn tensor(&self, name: &str) -> Option<TensorInfo<'a>> {
        self.tensors().find(|t| t.name == name)
    }

    fn raw_tensors(&self) -> RawTensorIter<'a> {
        RawTensorIter {
            cur: Cursor::new(self.data, self.tensor_start),
            next: 0,
            len: self.n_tensors,
            alignment: self.alignment,
        }
    }
}

fn wrong_type(key: &str, expected: &'static str, found: Value<'_>) -> GgufError {
    GgufError::WrongType {
        key: ErrName::new(key),
        expected,
        found: found.ty(),
    }
}

/// Checks the value of `general.alignment`: a u32 power of two up to [`MAX_ALIGNMENT`].
fn check_alignment(value: Value<'_>) -> Result<usize, GgufError> {
    let Value::U32(a) = value else {
        return Err(wrong_type(ALIGNMENT_KEY, "u32", value));
    };
    match usize::try_from(a) {
        Ok(n) if n.is_power_of_two() && n <= MAX_ALIGNMENT => Ok(n),
        _ => Err(GgufError::BadAlignment { alignment: a }),
    }
}

/// Reads one key/value entry; `check` validates array elements (see [`read_value`]).
fn read_kv<'a>(cur: &mut Cursor<'a>, check: bool) -> Result<(&'a str, Value<'a>), GgufError> {
    let key = cur.str()?;
    let ty_offset = cur.pos();
    let tag = cur.u32(Field::ValueType)?;
    let ty = ValueType::from_u32(tag).ok_or(GgufError::UnknownValueType {
        key: ErrName::new(key),
        ty: tag,
        offset: ty_offset,
    })?;
    let value = read_value(cur, ty, key, check)?;
    Ok((key, value))
}

/// Iterator over the key/value entries of a parsed file (see [`Gguf::kvs`]).
#[derive(Clone, Debug)]
pub struct KvIter<'a> {
    cur: Cursor<'a>,
    left: usize,
}

impl<'a> Iterator for KvIter<'a> {
    type Item = (&'a str, Value<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        self.left = self.left.checked_sub(1)?;
        match read_kv(&mut self.cur, false) {
            Ok(kv) => Some(kv),
            Err(_) => {
                // Unreachable for a parsed file; end the walk rather than yield garbage.
                self.left = 0;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }
}

/// Iterator over raw tensor-info records of a parsed file.
#[derive(Clone, Debug)]
struct RawTensorIter<'a> {
    cur: Cursor<'a>,
    next: usize,
    len: usize,
    alignment: usize,
}

impl<'a> Iterator for RawTensorIter<'a> {
    type Item = RawTensor<'a>;

    fn next(&mut self) -> Option<RawTensor<'a>> {
        if self.next >= self.len {
            return None;
        }
        match read_tensor_info(&mut self.cur, self.next, self.alignment) {
            Ok(t) => {
                self.next += 1;
                Some(t)
            }
            Err(_) => {
                // Unreachable for a parsed file; end the walk rather than yield garbage.
                self.next = self.len;
                None
            }
        }
    }
}

/// Iterator over the tensors of a parsed file (see [`Gguf::tensors`]).
#[derive(Clone, Debug)]
pub struct TensorIter<'a> {
    raw: RawTensorIter<'a>,
    data: &'a [u8],
    data_offset: usize,
}

impl<'a> Iterator for TensorIter<'a> {
    type Item = TensorInfo<'a>;

    fn next(&mut self) -> Option<TensorInfo<'a>> {
        let t = self.raw.next()?;
        let start = self
            .data_offset
            .checked_add(usize::try_from(t.offset).ok()?)?;
        let end = start.checked_add(usize::try_from(t.size).ok()?)?;
        let data = self.data.get(start..end)?;
        Some(TensorInfo {
            name: t.name,
            ty: t.ty,
            n_dims: t.n_dims,
            dims: t.dims,
            offset: t.offset,
            data,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.raw.len.saturating_sub(self.raw.next)))
    }
}

//! A bounds-checked little-endian cursor over the file bytes.

use super::error::{Field, GgufError};
use super::MAX_STRING_LEN;

/// Reads little-endian fields from `data`, starting at `pos`; every read is bounds-checked
/// and fails with [`GgufError::Truncated`] naming the field.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at absolute offset `pos` of `data`.
    pub(crate) fn new(data: &'a [u8], pos: usize) -> Self {
        Self { data, pos }
    }

    /// The absolute offset of the next read.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The bytes from absolute offset `start` up to the cursor.
    pub(crate) fn since(&self, start: usize) -> Option<&'a [u8]> {
        self.data.get(start..self.pos)
    }

    /// Bytes left after the cursor.
    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize, what: Field) -> Result<&'a [u8], GgufError> {
        let truncated = GgufError::Truncated {
            what,
            offset: self.pos,
        };
        let end = self.pos.checked_add(n).ok_or(truncated)?;
        let bytes = self.data.get(self.pos..end).ok_or(truncated)?;
        self.pos = end;
        Ok(bytes)
    }

    /// The next `N` bytes as an array.
    pub(crate) fn array<const N: usize>(&mut self, what: Field) -> Result<[u8; N], GgufError> {
        let offset = self.pos;
        let bytes = self.take(N, what)?;
        bytes
            .try_into()
            .map_err(|_| GgufError::Truncated { what, offset })
    }

    /// A u32.
    pub(crate) fn u32(&mut self, what: Field) -> Result<u32, GgufError> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// A u64.
    pub(crate) fn u64(&mut self, what: Field) -> Result<u64, GgufError> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A GGUF string: u64 length, then that many bytes of UTF-8.
    pub(crate) fn str(&mut self) -> Result<&'a str, GgufError> {
        let offset = self.pos;
        let len = self.u64(Field::StringLength)?;
        if len > MAX_STRING_LEN {
            return Err(GgufError::StringTooLong { len, offset });
        }
        let start = self.pos;
        let truncated = GgufError::Truncated {
            what: Field::StringBytes,
            offset: start,
        };
        let n = usize::try_from(len).map_err(|_| truncated)?;
        let bytes = self.take(n, Field::StringBytes)?;
        core::str::from_utf8(bytes).map_err(|_| GgufError::InvalidUtf8 { offset: start })
    }

    /// Skips a GGUF string without checking its UTF-8 (for re-walking a validated file).
    pub(crate) fn skip_str(&mut self) -> Result<(), GgufError> {
        let offset = self.pos;
        let len = self.u64(Field::StringLength)?;
        let truncated = GgufError::Truncated {
            what: Field::StringBytes,
            offset,
        };
        let n = usize::try_from(len).map_err(|_| truncated)?;
        self.take(n, Field::StringBytes).map(|_| ())
    }

    /// Fails with `Truncated { what }` unless `count` entries of at least `min_size` bytes
    /// each could still fit; the caller has already bounded `count`.
    pub(crate) fn ensure_room(
        &self,
        count: u64,
        min_size: u64,
        what: Field,
    ) -> Result<(), GgufError> {
        let need = count.checked_mul(min_size);
        match need {
            Some(need) if need <= self.remaining() as u64 => Ok(()),
            _ => Err(GgufError::Truncated {
                what,
                offset: self.pos,
            }),
        }
    }
}

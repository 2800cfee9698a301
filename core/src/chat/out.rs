//! A text writer over a caller-lent byte buffer, and the chat module's error type.

use core::fmt;

/// Why rendering or parsing failed.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChatError {
    /// The output or scratch buffer is full; `needed` more bytes would have been written.
    Overflow {
        /// Bytes that did not fit (of the write that failed).
        needed: usize,
    },
    /// A tool call's arguments (in a rendered history) are not a JSON object.
    BadToolArgs,
    /// The message sequence cannot be rendered by this template (see the template's docs).
    Unsupported,
}

impl fmt::Display for ChatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChatError::Overflow { needed } => write!(f, "buffer full ({needed} more bytes)"),
            ChatError::BadToolArgs => f.write_str("tool call arguments are not a JSON object"),
            ChatError::Unsupported => f.write_str("messages not supported by this template"),
        }
    }
}

/// Appends UTF-8 text to a borrowed buffer; fails with [`ChatError::Overflow`] when full.
///
/// A failed write leaves the text written so far in place (whole `&str` pieces only, so
/// [`Out::as_str`] stays valid UTF-8).
#[derive(Debug)]
pub struct Out<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> Out<'a> {
    /// An empty writer over `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Out { buf, len: 0 }
    }

    /// Appends `s` whole, or nothing.
    pub fn push(&mut self, s: &str) -> Result<(), ChatError> {
        let end = self
            .len
            .checked_add(s.len())
            .filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(ChatError::Overflow {
                needed: s.len() - (self.buf.len() - self.len),
            });
        };
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }

    /// Appends each piece in order.
    pub fn push_all(&mut self, parts: &[&str]) -> Result<(), ChatError> {
        parts.iter().try_for_each(|p| self.push(p))
    }

    /// The text written so far.
    pub fn as_str(&self) -> &str {
        // Only whole &str pieces are ever copied in, so this never fails.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets everything written.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Cuts the text back to `len` bytes (no-op if longer than what is written, or if
    /// `len` is not a char boundary).
    pub fn truncate(&mut self, len: usize) {
        if len < self.len && self.as_str().is_char_boundary(len) {
            self.len = len;
        }
    }
}

impl fmt::Write for Out<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push(s).map_err(|_| fmt::Error)
    }
}

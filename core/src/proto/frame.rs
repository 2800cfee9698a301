//! Framing: `u32 LE length | version u8 | kind u8 | postcard body`, and the incremental decoder.

use serde::Serialize;

use super::{ProtoError, Request, Response, MAX_FRAME, PROTOCOL_VERSION};

/// Bytes of the length prefix.
pub const LEN_PREFIX: usize = 4;
/// Bytes of the version and kind that follow the length prefix.
pub const HEADER_LEN: usize = 2;

/// Which message enum a frame body holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FrameKind {
    /// A [`Request`] (client → daemon).
    Request = 1,
    /// A [`Response`] (daemon → client).
    Response = 2,
}

impl FrameKind {
    /// The kind with wire byte `b`.
    pub const fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(FrameKind::Request),
            2 => Some(FrameKind::Response),
            _ => None,
        }
    }
}

/// A message enum that can travel in a frame.
pub trait Message: Serialize {
    /// The frame kind that carries it.
    const KIND: FrameKind;
}

impl Message for Request<'_> {
    const KIND: FrameKind = FrameKind::Request;
}

impl Message for Response<'_> {
    const KIND: FrameKind = FrameKind::Response;
}

/// Encodes `msg` as one frame into `out`; returns the frame's length in bytes.
///
/// Fails with [`ProtoError::BufferTooSmall`] when `out` is too short and with
/// [`ProtoError::FrameTooLarge`] when the frame would exceed [`MAX_FRAME`].
pub fn encode_frame<M: Message>(msg: &M, out: &mut [u8]) -> Result<usize, ProtoError> {
    let body_at = LEN_PREFIX + HEADER_LEN;
    let room = out.get_mut(body_at..).ok_or(ProtoError::BufferTooSmall)?;
    let body = postcard::to_slice(msg, room)
        .map_err(|_| ProtoError::BufferTooSmall)?
        .len();
    let len = body + HEADER_LEN; // body <= out.len(), no overflow.
    if len > MAX_FRAME {
        return Err(ProtoError::FrameTooLarge {
            len: u32::try_from(len).unwrap_or(u32::MAX),
            max: MAX_FRAME as u32,
        });
    }
    let len32 = len as u32; // len <= MAX_FRAME fits.
    out[..LEN_PREFIX].copy_from_slice(&len32.to_le_bytes());
    out[LEN_PREFIX] = PROTOCOL_VERSION;
    out[LEN_PREFIX + 1] = M::KIND as u8;
    Ok(body_at + body)
}

/// One complete, header-checked frame borrowed from the decoder's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Which enum the body holds.
    pub kind: FrameKind,
    /// The postcard body.
    pub body: &'a [u8],
}

impl<'a> Frame<'a> {
    /// Decodes the body as a [`Request`].
    pub fn request(&self) -> Result<Request<'a>, ProtoError> {
        self.decode(FrameKind::Request)
    }

    /// Decodes the body as a [`Response`].
    pub fn response(&self) -> Result<Response<'a>, ProtoError> {
        self.decode(FrameKind::Response)
    }

    fn decode<T: serde::Deserialize<'a>>(&self, want: FrameKind) -> Result<T, ProtoError> {
        if self.kind != want {
            return Err(ProtoError::WrongKind);
        }
        match postcard::take_from_bytes::<T>(self.body) {
            Ok((msg, [])) => Ok(msg),
            _ => Err(ProtoError::Garbage),
        }
    }
}

/// Decodes frames from a byte stream into a caller-lent buffer, without allocating.
///
/// Feed bytes with [`push`](Self::push) and take frames with
/// [`next_frame`](Self::next_frame) until it returns `Ok(None)`. The declared length is
/// checked against the cap as soon as the 4-byte prefix is in, before any body byte is
/// kept. The cap is the smaller of the configured limit and what the buffer can hold.
///
/// Errors: [`ProtoError::FrameTooLarge`] is fatal (the decoder drops all further input
/// until [`reset`](Self::reset)); [`ProtoError::BadFrame`] and [`ProtoError::BadVersion`]
/// consume the offending frame, and decoding goes on with the next one.
#[derive(Debug)]
pub struct FrameDecoder<'b> {
    buf: &'b mut [u8],
    filled: usize,
    /// Bytes at the front of `buf` that belong to the frame handed out last.
    consumed: usize,
    max: usize,
    fatal: Option<ProtoError>,
}

impl<'b> FrameDecoder<'b> {
    /// A decoder over `buf` with the cap [`MAX_FRAME`].
    pub fn new(buf: &'b mut [u8]) -> Self {
        Self::with_limit(buf, MAX_FRAME)
    }

    /// A decoder over `buf` that rejects frames longer than `max_frame` bytes after the prefix.
    pub fn with_limit(buf: &'b mut [u8], max_frame: usize) -> Self {
        let max = max_frame.min(buf.len().saturating_sub(LEN_PREFIX));
        FrameDecoder {
            buf,
            filled: 0,
            consumed: 0,
            max,
            fatal: None,
        }
    }

    /// The frame cap in force, in bytes after the length prefix.
    pub fn max_frame(&self) -> usize {
        self.max
    }

    /// Bytes held that are not yet part of a returned frame.
    pub fn buffered(&self) -> usize {
        self.filled - self.consumed
    }

    /// Forgets all buffered bytes and any fatal error.
    pub fn reset(&mut self) {
        self.filled = 0;
        self.consumed = 0;
        self.fatal = None;
    }

    /// Copies as many of `bytes` as fit; returns how many were taken. Returns less than
    /// `bytes.len()` only when the buffer holds a complete frame not yet taken with
    /// [`next_frame`](Self::next_frame). After a fatal error all bytes are taken and dropped.
    pub fn push(&mut self, bytes: &[u8]) -> usize {
        if self.fatal.is_some() {
            return bytes.len();
        }
        self.compact();
        let room = self.buf.len() - self.filled;
        let n = room.min(bytes.len());
        self.buf[self.filled..self.filled + n].copy_from_slice(&bytes[..n]);
        self.filled += n;
        n
    }

    /// The next complete frame, `Ok(None)` if more bytes are needed, or why the next frame
    /// is bad. The frame borrows the buffer until the next call.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, ProtoError> {
        if let Some(e) = self.fatal {
            return Err(e);
        }
        self.compact();
        let Some(prefix) = self
            .buf
            .get(..LEN_PREFIX)
            .filter(|_| self.filled >= LEN_PREFIX)
        else {
            return Ok(None);
        };
        let mut le = [0u8; LEN_PREFIX];
        le.copy_from_slice(prefix);
        let len32 = u32::from_le_bytes(le);
        let len = usize::try_from(len32).unwrap_or(usize::MAX);
        if len > self.max {
            let e = ProtoError::FrameTooLarge {
                len: len32,
                max: u32::try_from(self.max).unwrap_or(u32::MAX),
            };
            self.fatal = Some(e);
            self.filled = 0;
            return Err(e);
        }
        let total = LEN_PREFIX + len; // len <= max <= buf.len() - LEN_PREFIX.
        if self.filled < total {
            return Ok(None);
        }
        self.consumed = total;
        if len < HEADER_LEN {
            return Err(ProtoError::BadFrame);
        }
        let version = self.buf[LEN_PREFIX];
        if version != PROTOCOL_VERSION {
            return Err(ProtoError::BadVersion { got: version });
        }
        let kind = FrameKind::from_u8(self.buf[LEN_PREFIX + 1]).ok_or(ProtoError::BadFrame)?;
        Ok(Some(Frame {
            kind,
            body: &self.buf[LEN_PREFIX + HEADER_LEN..total],
        }))
    }

    /// Drops the frame handed out last from the front of the buffer.
    fn compact(&mut self) {
        if self.consumed > 0 {
            self.buf.copy_within(self.consumed..self.filled, 0);
            self.filled -= self.consumed;
            self.consumed = 0;
        }
    }
}

//! The protocol error type.

use core::fmt;

use super::ErrorCode;

/// Why a frame could not be encoded or decoded.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProtoError {
    /// A frame declares `len` bytes after its length prefix, above the cap `max`.
    FrameTooLarge {
        /// Declared length.
        len: u32,
        /// The cap in force.
        max: u32,
    },
    /// A frame is shorter than its header, or its kind byte is unknown.
    BadFrame,
    /// A frame carries protocol version `got`, not [`PROTOCOL_VERSION`](super::PROTOCOL_VERSION).
    BadVersion {
        /// The version byte received.
        got: u8,
    },
    /// A request arrived where a response was expected, or the reverse.
    WrongKind,
    /// The body is not a valid encoding of the message (or has trailing bytes).
    Garbage,
    /// The output buffer cannot hold the encoded frame.
    BufferTooSmall,
}

impl ProtoError {
    /// The wire code the daemon reports for this error.
    pub const fn code(&self) -> ErrorCode {
        match self {
            ProtoError::FrameTooLarge { .. } => ErrorCode::FrameTooLarge,
            ProtoError::BadFrame | ProtoError::WrongKind => ErrorCode::BadFrame,
            ProtoError::BadVersion { .. } => ErrorCode::BadVersion,
            ProtoError::Garbage => ErrorCode::Garbage,
            ProtoError::BufferTooSmall => ErrorCode::Internal,
        }
    }

    /// Whether the byte stream can go on after this error. After a fatal one the frame
    /// boundaries are lost and the connection should be closed.
    pub const fn is_fatal(&self) -> bool {
        matches!(self, ProtoError::FrameTooLarge { .. })
    }
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtoError::FrameTooLarge { len, max } => {
                write!(f, "frame of {len} bytes exceeds the cap of {max}")
            }
            ProtoError::BadFrame => f.write_str("malformed frame header"),
            ProtoError::BadVersion { got } => write!(f, "unsupported protocol version {got}"),
            ProtoError::WrongKind => f.write_str("message of the wrong direction"),
            ProtoError::Garbage => f.write_str("undecodable message body"),
            ProtoError::BufferTooSmall => f.write_str("output buffer too small"),
        }
    }
}

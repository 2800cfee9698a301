//! The wire protocol between the daemon `glimmerd` and its clients.
//!
//! A connection carries frames both ways. A frame is
//! ```text
//! u32 LE length | u8 version | u8 kind | postcard body
//! ```
//! where `length` counts the bytes after the prefix (version, kind and body) and may not
//! exceed [`MAX_FRAME`]; `version` is [`PROTOCOL_VERSION`]; `kind` is a [`FrameKind`]
//! (1: [`Request`], 2: [`Response`]). The body is the postcard encoding of the message
//! enum. `docs/PROTOCOL.md` spells out the encoding for implementers in other languages.
//!
//! # How the types fit
//! - [`encode_frame`] writes one message (a [`Request`] or [`Response`], via [`Message`])
//!   into a caller buffer.
//! - [`FrameDecoder`] splits an incoming byte stream into [`Frame`]s inside a caller buffer;
//!   [`Frame::request`] / [`Frame::response`] decode the body zero-copy.
//! - [`ProtoError`] says why framing or decoding failed; [`ErrorCode`] is the stable code
//!   sent in [`Response::Error`].

mod code;
mod error;
mod frame;
mod msg;
#[cfg(test)]
mod tests;

pub use code::{ErrorCode, ALL_ERROR_CODES};
pub use error::ProtoError;
pub use frame::{encode_frame, Frame, FrameDecoder, FrameKind, Message, HEADER_LEN, LEN_PREFIX};
pub use msg::{
    DoneStats, EventKind, Request, Response, Role, SamplingConfig, ServerStats, StopReason,
    ToolChoice, ToolInfo, MAX_TOOLS,
};

/// The protocol version byte every frame carries.
pub const PROTOCOL_VERSION: u8 = 1;

/// Largest frame, in bytes after the 4-byte length prefix (version + kind + body).
pub const MAX_FRAME: usize = 64 * 1024;

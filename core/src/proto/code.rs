//! Stable wire error codes.

use core::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why the daemon refused or aborted a request: a stable `u16` sent in
/// [`Response::Error`](super::Response::Error).
///
/// Codes never change meaning and are never reused. On the wire a code is the postcard
/// varint of its `u16` value (not of a variant index), so a client that sees a value it does
/// not know decodes it as [`ErrorCode::Unknown`].
#[non_exhaustive]
#[repr(u16)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 1: a frame header is malformed (length below the header size, unknown kind byte).
    BadFrame = 1,
    /// 2: a frame declares a length above the size cap.
    FrameTooLarge = 2,
    /// 3: a frame carries a protocol version this peer does not speak.
    BadVersion = 3,
    /// 4: a frame body is not a valid encoding of a message.
    Garbage = 4,
    /// 5: the peer was too slow (a partial frame, a client tool that never answered).
    Timeout = 5,
    /// 6: the session exists but belongs to another connection.
    NotYourSession = 6,
    /// 7: no session has this id.
    UnknownSession = 7,
    /// 8: no tool has this name (or it is not allowed in this session).
    UnknownTool = 8,
    /// 9: tool arguments are malformed or fail the tool's schema.
    BadToolArgs = 9,
    /// 10: an actuator refused a value outside its range or rate limit.
    ActuatorLimit = 10,
    /// 11: a tool did not finish within its timeout.
    ToolTimeout = 11,
    /// 12: a tool ran and reported failure.
    ToolFailed = 12,
    /// 13: the daemon has no free session slot or the session is already generating.
    Busy = 13,
    /// 14: the session's context window is full.
    ContextFull = 14,
    /// 15: the client may not do this (tool not allowed, registration refused).
    PermissionDenied = 15,
    /// 16: the daemon is shutting down.
    ShuttingDown = 16,
    /// 17: a bug or an unexpected failure inside the daemon.
    Internal = 17,
    /// 18: a tool name is already registered.
    AlreadyRegistered = 18,
    /// 19: a request arrived before `Hello`, or `Hello` twice.
    BadState = 19,
    /// 0xFFFF: a code this build does not know (sent by a newer peer).
    Unknown = 0xFFFF,
}

/// Every known code, in numeric order (without [`ErrorCode::Unknown`]).
pub const ALL_ERROR_CODES: [ErrorCode; 19] = [
    ErrorCode::BadFrame,
    ErrorCode::FrameTooLarge,
    ErrorCode::BadVersion,
    ErrorCode::Garbage,
    ErrorCode::Timeout,
    ErrorCode::NotYourSession,
    ErrorCode::UnknownSession,
    ErrorCode::UnknownTool,
    ErrorCode::BadToolArgs,
    ErrorCode::ActuatorLimit,
    ErrorCode::ToolTimeout,
    ErrorCode::ToolFailed,
    ErrorCode::Busy,
    ErrorCode::ContextFull,
    ErrorCode::PermissionDenied,
    ErrorCode::ShuttingDown,
    ErrorCode::Internal,
    ErrorCode::AlreadyRegistered,
    ErrorCode::BadState,
];

impl ErrorCode {
    /// The wire value.
    pub const fn as_u16(self) -> u16 {
        self as u16
    }

    /// The code with wire value `v`; [`ErrorCode::Unknown`] for values this build lacks.
    pub fn from_u16(v: u16) -> Self {
        ALL_ERROR_CODES
            .iter()
            .copied()
            .find(|c| c.as_u16() == v)
            .unwrap_or(ErrorCode::Unknown)
    }

    /// A short lowercase name, e.g. `"frame_too_large"`.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorCode::BadFrame => "bad_frame",
            ErrorCode::FrameTooLarge => "frame_too_large",
            ErrorCode::BadVersion => "bad_version",
            ErrorCode::Garbage => "garbage",
            ErrorCode::Timeout => "timeout",
            ErrorCode::NotYourSession => "not_your_session",
            ErrorCode::UnknownSession => "unknown_session",
            ErrorCode::UnknownTool => "unknown_tool",
            ErrorCode::BadToolArgs => "bad_tool_args",
            ErrorCode::ActuatorLimit => "actuator_limit",
            ErrorCode::ToolTimeout => "tool_timeout",
            ErrorCode::ToolFailed => "tool_failed",
            ErrorCode::Busy => "busy",
            ErrorCode::ContextFull => "context_full",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::ShuttingDown => "shutting_down",
            ErrorCode::Internal => "internal",
            ErrorCode::AlreadyRegistered => "already_registered",
            ErrorCode::BadState => "bad_state",
            ErrorCode::Unknown => "unknown",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.as_u16())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u16(self.as_u16())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        u16::deserialize(d).map(ErrorCode::from_u16)
    }
}

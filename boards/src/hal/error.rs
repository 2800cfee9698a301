//! Why a board could not open a device.

use std::fmt;
use std::io;

/// Why a device could not be opened.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// The device node or sysfs directory does not exist.
    NotFound,
    /// The process may not open it.
    PermissionDenied,
    /// The device exists but does not offer what was asked (no such line or channel).
    NoSuchChannel,
    /// Another I/O failure.
    Io(io::ErrorKind),
    /// This kind of device is not available on this operating system.
    Unsupported,
}

impl From<&io::Error> for OpenError {
    fn from(e: &io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::NotFound => OpenError::NotFound,
            io::ErrorKind::PermissionDenied => OpenError::PermissionDenied,
            k => OpenError::Io(k),
        }
    }
}

impl From<io::Error> for OpenError {
    fn from(e: io::Error) -> Self {
        OpenError::from(&e)
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::NotFound => f.write_str("device not found"),
            OpenError::PermissionDenied => f.write_str("permission denied"),
            OpenError::NoSuchChannel => f.write_str("no such line or channel on the device"),
            OpenError::Io(k) => write!(f, "I/O error: {k}"),
            OpenError::Unsupported => f.write_str("not supported on this operating system"),
        }
    }
}

impl std::error::Error for OpenError {}

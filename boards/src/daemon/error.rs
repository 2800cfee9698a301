//! [`DaemonError`]: why the daemon could not start or stopped.

use std::path::PathBuf;

/// Why the daemon failed to start or to shut down cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
    /// The model could not be loaded or the engine sized (boxed: the std error is large).
    #[error("loading the model: {0}")]
    Model(Box<crate::Error>),
    /// The socket could not be set up.
    #[error("socket {0}: {1}")]
    Socket(PathBuf, #[source] std::io::Error),
    /// Another daemon answers on the socket path.
    #[error("socket {0} is in use by a running daemon")]
    InUse(PathBuf),
    /// The configuration is unusable.
    #[error("configuration: {0}")]
    Config(&'static str),
    /// The board profile is unknown.
    #[error("unknown board profile {0:?}")]
    UnknownBoard(String),
    /// A tool the [`ToolHost`](super::ToolHost) offers has an unusable schema.
    #[error("tool {0}: {1}")]
    ToolSchema(String, String),
    /// A daemon thread could not be started or panicked.
    #[error("thread {0}: {1}")]
    Thread(&'static str, String),
}

impl From<crate::Error> for DaemonError {
    fn from(e: crate::Error) -> Self {
        DaemonError::Model(Box::new(e))
    }
}

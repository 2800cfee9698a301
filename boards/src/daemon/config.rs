//! [`DaemonConfig`]: what `glimmerd` loads, where it listens, who may connect, and its limits.

use std::path::PathBuf;
use std::time::Duration;

use crate::model_file::default_model_path;

/// Limits that keep one client from starving or stalling the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeLimits {
    /// Most connections one uid may hold open at once.
    pub max_conns_per_uid: usize,
    /// Most requests one connection may have in flight (`Send` turns and `InvokeTool` calls).
    pub max_inflight: usize,
    /// Longest a partial frame may sit unfinished before the sender gets `Timeout` and is
    /// disconnected.
    pub frame_timeout: Duration,
    /// Longest a daemon tool ([`ToolHost`](super::ToolHost)) may run.
    pub tool_timeout: Duration,
    /// Longest a client-registered tool may take to answer.
    pub client_tool_timeout: Duration,
    /// Most bytes of tool output fed back to the model (longer output is cut).
    pub max_tool_output: usize,
    /// Most tool rounds in one `Send` turn before it ends with `ToolLimit`.
    pub max_tool_rounds: u32,
    /// Frames queued for one client before it counts as not reading and is disconnected.
    pub outbox_frames: usize,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            max_conns_per_uid: 16,
            max_inflight: 4,
            frame_timeout: Duration::from_secs(5),
            tool_timeout: Duration::from_secs(5),
            client_tool_timeout: Duration::from_secs(30),
            max_tool_output: 2048,
            max_tool_rounds: 4,
            outbox_frames: 4096,
        }
    }
}

/// Everything `glimmerd` needs to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonConfig {
    /// The GGUF model to map.
    pub model: PathBuf,
    /// Board profile name (reported to clients).
    pub board: String,
    /// Path of the Unix socket. A missing parent directory is created with mode 0750.
    pub socket: PathBuf,
    /// Peer uids allowed to connect.
    pub allow_uids: Vec<u32>,
    /// Peer gids allowed to connect (a peer passes if its uid or its gid is listed).
    pub allow_gids: Vec<u32>,
    /// Session slots (each with its own KV cache).
    pub sessions: usize,
    /// Context length of each session.
    pub ctx: usize,
    /// Most tokens per forward call (prefill chunk).
    pub chunk: usize,
    /// Worker threads the engine may use (CPU backend).
    pub threads: usize,
    /// The backend the engine runs on.
    pub backend: crate::engine::BackendKind,
    /// System prompt for sessions that do not give one (`None`: the template's default).
    pub default_system: Option<String>,
    /// Per-client limits.
    pub limits: ServeLimits,
}

impl DaemonConfig {
    /// The defaults: the default model, board `sim`, `socket`, only the current uid allowed,
    /// 4 sessions of 2048 tokens, chunks of 64, one thread, the CPU backend.
    pub fn new(socket: PathBuf) -> Self {
        DaemonConfig {
            model: default_model_path(),
            board: "sim".into(),
            socket,
            allow_uids: vec![super::listen::own_uid()],
            allow_gids: Vec::new(),
            sessions: 4,
            ctx: 2048,
            chunk: 64,
            threads: 1,
            backend: crate::engine::BackendKind::Cpu,
            default_system: None,
            limits: ServeLimits::default(),
        }
    }
}

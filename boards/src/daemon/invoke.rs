//! Running one tool call with a timeout: on the [`ToolHost`](super::ToolHost) (on a thread of
//! its own) or forwarded to the client that registered the tool.

use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::Arc;

use glimmer_core::proto::{ErrorCode, Response};

use super::shared::{PendingCall, Shared};
use super::tools::{Target, ToolFailure};

/// The outcome of one tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ToolReply {
    /// Whether the tool succeeded.
    pub ok: bool,
    /// The failure code, when it failed.
    pub code: Option<ErrorCode>,
    /// Output (capped) or the failure as JSON.
    pub content: String,
}

impl ToolReply {
    /// A successful reply with `content` cut to `max` bytes.
    pub fn ok(mut content: String, max: usize) -> Self {
        if content.len() > max {
            let mut cut = max;
            while !content.is_char_boundary(cut) {
                cut -= 1;
            }
            content.truncate(cut);
            content.push_str("…[truncated]");
        }
        ToolReply {
            ok: true,
            code: None,
            content,
        }
    }

    /// A failed reply.
    pub fn failed(f: &ToolFailure) -> Self {
        ToolReply {
            ok: false,
            code: Some(f.code),
            content: f.to_json(),
        }
    }
}

/// Runs `name` with checked `args` on `target` on a new thread, and passes the reply to `done`.
pub(crate) fn spawn(
    shared: &Arc<Shared>,
    target: Target,
    name: String,
    args: String,
    done: impl FnOnce(ToolReply) + Send + 'static,
) {
    let sh = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name("glimmerd-tool".into())
        .spawn(move || done(run(&sh, &target, &name, &args)));
    if let Err(e) = spawned {
        log::error!("cannot start a tool thread: {e}");
    }
}

/// Runs `name` with checked `args` on `target`, waiting at most the configured timeout.
pub(crate) fn run(shared: &Arc<Shared>, target: &Target, name: &str, args: &str) -> ToolReply {
    let limits = &shared.cfg.limits;
    let res = match target {
        Target::Host => run_host(shared, name, args),
        Target::Client { conn, out } => {
            let call_id = shared.call_id();
            let (tx, rx) = sync_channel(1);
            shared
                .calls
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(
                    call_id,
                    PendingCall {
                        conn: *conn,
                        reply: tx,
                    },
                );
            let sent = out.send(&Response::CallClientTool {
                call_id,
                name,
                args_json: args,
            });
            let got = if sent {
                rx.recv_timeout(limits.client_tool_timeout)
            } else {
                Err(RecvTimeoutError::Disconnected)
            };
            shared
                .calls
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&call_id);
            match got {
                Ok(reply) if reply.ok => Ok(reply.content),
                Ok(reply) => Err(ToolFailure::new(ErrorCode::ToolFailed, reply.content)),
                Err(RecvTimeoutError::Timeout) => Err(ToolFailure::new(
                    ErrorCode::Timeout,
                    format!("client tool {name} did not answer in time"),
                )),
                Err(RecvTimeoutError::Disconnected) => Err(ToolFailure::new(
                    ErrorCode::ToolFailed,
                    format!("the client running {name} disconnected"),
                )),
            }
        }
    };
    match res {
        Ok(text) => ToolReply::ok(text, limits.max_tool_output),
        Err(f) => ToolReply::failed(&f),
    }
}

fn run_host(shared: &Arc<Shared>, name: &str, args: &str) -> Result<String, ToolFailure> {
    let (tx, rx) = sync_channel(1);
    let sh = Arc::clone(shared);
    let (n, a) = (name.to_string(), args.to_string());
    std::thread::Builder::new()
        .name("glimmerd-hosttool".into())
        .spawn(move || {
            let r = sh.tools.host.invoke(&n, &a);
            tx.send(r).ok();
        })
        .map_err(|e| ToolFailure::new(ErrorCode::Internal, format!("no tool thread: {e}")))?;
    match rx.recv_timeout(shared.cfg.limits.tool_timeout) {
        Ok(r) => r,
        Err(RecvTimeoutError::Timeout) => {
            log::warn!("tool {name} timed out; abandoning its thread");
            Err(ToolFailure::new(
                ErrorCode::ToolTimeout,
                format!("tool {name} did not finish in time"),
            ))
        }
        Err(RecvTimeoutError::Disconnected) => Err(ToolFailure::new(
            ErrorCode::ToolFailed,
            format!("tool {name} panicked"),
        )),
    }
}

//! State shared by the acceptor, the connection threads, the tool runners and the engine
//! worker: configuration, counters, the tool registry and the pending client-tool calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Sender, SyncSender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use glimmer_core::proto::ServerStats;

use super::invoke::ToolReply;
use super::tools::Registry;
use super::worker::Cmd;
use super::DaemonConfig;

/// Daemon-wide counters (see [`ServerStats`]).
#[derive(Default)]
pub(crate) struct Counters {
    pub sessions: AtomicU32,
    pub tokens_total: AtomicU64,
    pub prefill_total: AtomicU64,
    pub tool_calls_total: AtomicU64,
    pub connections_total: AtomicU64,
    /// The engine's [`tokens_fed`](crate::engine::Engine::tokens_fed), after every step.
    pub tokens_fed: AtomicU64,
}

/// A client-tool call waiting for its `ToolResult`.
pub(crate) struct PendingCall {
    pub conn: u64,
    pub reply: SyncSender<ToolReply>,
}

/// Everything the daemon's threads share.
pub(crate) struct Shared {
    pub cfg: DaemonConfig,
    pub started: Instant,
    pub stats: Counters,
    pub tools: Registry,
    pub calls: Mutex<HashMap<u32, PendingCall>>,
    pub next_call: AtomicU32,
    pub next_conn: AtomicU64,
    pub per_uid: Mutex<HashMap<u32, usize>>,
    /// Set once the model is loaded: its name (file stem).
    pub model_name: OnceLock<String>,
    /// Stop accepting connections.
    pub stop_accept: AtomicBool,
    /// Tell connections to say `ShuttingDown` and close.
    pub stop_conns: AtomicBool,
    pub worker: Mutex<Option<Sender<Cmd>>>,
}

impl Shared {
    /// The next id for a tool call (never 0).
    pub fn call_id(&self) -> u32 {
        loop {
            let id = self.next_call.fetch_add(1, Ordering::Relaxed);
            if id != 0 {
                return id;
            }
        }
    }

    /// Sends `cmd` to the engine worker; false when it is gone.
    pub fn to_worker(&self, cmd: Cmd) -> bool {
        let tx = self.worker.lock().unwrap_or_else(|e| e.into_inner());
        tx.as_ref().is_some_and(|tx| tx.send(cmd).is_ok())
    }

    /// The counters as the wire reports them.
    pub fn server_stats(&self) -> ServerStats {
        let s = &self.stats;
        ServerStats {
            sessions: s.sessions.load(Ordering::Relaxed),
            max_sessions: u32::try_from(self.cfg.sessions).unwrap_or(u32::MAX),
            uptime_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            tokens_total: s.tokens_total.load(Ordering::Relaxed),
            prefill_total: s.prefill_total.load(Ordering::Relaxed),
            tool_calls_total: s.tool_calls_total.load(Ordering::Relaxed),
            connections_total: s.connections_total.load(Ordering::Relaxed),
        }
    }
}

/// One request in flight on a connection; counts down when dropped.
pub(crate) struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    /// Takes a place in `count` if fewer than `max` are taken.
    pub fn try_take(count: &Arc<AtomicUsize>, max: usize) -> Option<InFlight> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| InFlight(Arc::clone(count)))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

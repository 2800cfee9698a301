//! `glimmerd`, the inference daemon: one mapped model serving many chat sessions to local
//! clients over a Unix socket, speaking [`glimmer_core::proto`].
//!
//! # How the pieces fit
//! - [`Daemon::start`] binds the socket ([`listen`]: a 0750 directory, a 0660 socket) and
//!   starts the engine worker, which loads the model on its own thread ([`worker`]: it owns
//!   the engine, one KV slot per session, and runs sessions round-robin, one prefill chunk or
//!   one decoded token at a time). The engine is any
//!   [`SlotEngine`](crate::engine::SlotEngine): the CPU [`Engine`](crate::engine::Engine), or
//!   with `--backend` the wgpu or CUDA one ([`crate::engine::build_engine`]).
//! - An acceptor thread takes connections; each gets a reader thread ([`conn`]: peer
//!   credentials, per-uid and in-flight limits, frame errors, a partial-frame timeout) and a
//!   writer thread ([`outbox`]), so a slow reader never stalls the engine.
//! - A session's turn ([`session`]) renders new messages with the model's chat template
//!   ([`prompt`]), streams tokens, spots tool calls with the streaming parser, runs them
//!   ([`invoke`]: the daemon's [`ToolHost`] or a client that registered the tool, each with
//!   a timeout), and appends the results to the live KV cache without re-prefill.
//! - [`Daemon::shutdown`] (or [`serve`] when its flag is set) stops accepting, ends running
//!   turns with `Done{Cancelled}`, tells clients `ShuttingDown` and removes the socket.

mod board_tools;
mod config;
mod conn;
mod constrain;
mod error;
mod invoke;
pub mod listen;
mod outbox;
mod prompt;
mod session;
mod shared;
mod tools;
mod worker;

use std::collections::HashMap;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use glimmer_core::proto::ServerStats;

pub use board_tools::failure as board_tool_failure;
pub use config::{DaemonConfig, ServeLimits};
pub use conn::SERVER_NAME;
pub use error::DaemonError;
pub use prompt::PromptError;
pub use tools::{NoTools, ToolDesc, ToolFailure, ToolHost, MAX_OPTIONS, MAX_PARAMS};

use shared::{Counters, Shared};
use worker::Cmd;

/// A running daemon. Dropping it without [`shutdown`](Self::shutdown) shuts it down too.
pub struct Daemon {
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
    worker: Option<JoinHandle<()>>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Daemon {
    /// Binds the socket, loads the model and starts serving; returns once the model is
    /// loaded (or failed to load).
    pub fn start(cfg: DaemonConfig, host: Arc<dyn ToolHost>) -> Result<Daemon, DaemonError> {
        if cfg.sessions == 0 || cfg.ctx == 0 || cfg.chunk == 0 {
            return Err(DaemonError::Config(
                "sessions, ctx and chunk must be positive",
            ));
        }
        if crate::profiles::profile(&cfg.board).is_none() {
            return Err(DaemonError::UnknownBoard(cfg.board.clone()));
        }
        let registry = tools::Registry::new(host)?;
        let (tx, rx) = channel::<Cmd>();
        let shared = Arc::new(Shared {
            cfg,
            started: Instant::now(),
            stats: Counters::default(),
            tools: registry,
            calls: Mutex::new(HashMap::new()),
            next_call: AtomicU32::new(1),
            next_conn: AtomicU64::new(1),
            per_uid: Mutex::new(HashMap::new()),
            model_name: OnceLock::new(),
            stop_accept: AtomicBool::new(false),
            stop_conns: AtomicBool::new(false),
            worker: Mutex::new(Some(tx.clone())),
        });
        let (ready_tx, ready_rx) = sync_channel(1);
        let sh = Arc::clone(&shared);
        let worker = std::thread::Builder::new()
            .name("glimmerd-engine".into())
            .spawn(move || worker::run(sh, tx, rx, ready_tx))
            .map_err(|e| DaemonError::Thread("engine", e.to_string()))?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(DaemonError::Thread("engine", "died while loading".into())),
        }
        let listener = match listen::bind(&shared.cfg.socket) {
            Ok(l) => l,
            Err(e) => {
                shared.to_worker(Cmd::Shutdown);
                worker.join().ok();
                return Err(e);
            }
        };
        let conns = Arc::new(Mutex::new(Vec::new()));
        let (sh, cs) = (Arc::clone(&shared), Arc::clone(&conns));
        let acceptor = std::thread::Builder::new()
            .name("glimmerd-accept".into())
            .spawn(move || accept_loop(&sh, &listener, &cs))
            .map_err(|e| DaemonError::Thread("acceptor", e.to_string()))?;
        log::info!("listening on {}", shared.cfg.socket.display());
        Ok(Daemon {
            shared,
            acceptor: Some(acceptor),
            worker: Some(worker),
            conns,
        })
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.shared.cfg.socket
    }

    /// Tokens the engine has fed through the model since start, all sessions together
    /// (updated after every engine step).
    pub fn tokens_fed(&self) -> u64 {
        self.shared.stats.tokens_fed.load(Ordering::Relaxed)
    }

    /// The daemon's counters.
    pub fn stats(&self) -> ServerStats {
        self.shared.server_stats()
    }

    /// Stops accepting, ends running turns (`Done{Cancelled}`), tells every client
    /// `ShuttingDown`, closes connections and removes the socket.
    pub fn shutdown(mut self) -> Result<(), DaemonError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), DaemonError> {
        let sh = &self.shared;
        sh.stop_accept.store(true, Ordering::Relaxed);
        let mut res = Ok(());
        if let Some(a) = self.acceptor.take() {
            if a.join().is_err() {
                res = Err(DaemonError::Thread("acceptor", "panicked".into()));
            }
        }
        sh.to_worker(Cmd::Shutdown);
        if let Some(w) = self.worker.take() {
            if w.join().is_err() {
                res = Err(DaemonError::Thread("engine", "panicked".into()));
            }
        }
        sh.worker.lock().unwrap_or_else(|e| e.into_inner()).take();
        sh.stop_conns.store(true, Ordering::Relaxed);
        let conns = std::mem::take(&mut *self.conns.lock().unwrap_or_else(|e| e.into_inner()));
        for c in conns {
            c.join().ok();
        }
        log::info!("stopped");
        res
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.acceptor.is_some() || self.worker.is_some() {
            self.stop().ok();
        }
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &UnixListener, conns: &Mutex<Vec<JoinHandle<()>>>) {
    if let Err(e) = listener.set_nonblocking(true) {
        log::error!("listener: {e}");
        return;
    }
    while !shared.stop_accept.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                if stream.set_nonblocking(false).is_err() {
                    continue;
                }
                let id = shared.next_conn.fetch_add(1, Ordering::Relaxed);
                let sh = Arc::clone(shared);
                let spawned = std::thread::Builder::new()
                    .name(format!("glimmerd-conn-{id}"))
                    .spawn(move || conn::serve(sh, stream, id));
                match spawned {
                    Ok(h) => {
                        let mut cs = conns.lock().unwrap_or_else(|e| e.into_inner());
                        cs.retain(|h| !h.is_finished());
                        cs.push(h);
                    }
                    Err(e) => log::error!("cannot start a connection thread: {e}"),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => {
                log::warn!("accept: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    let path: PathBuf = shared.cfg.socket.clone();
    if let Err(e) = std::fs::remove_file(&path) {
        log::warn!("removing {}: {e}", path.display());
    }
}

/// Runs a daemon until `stop` becomes true, then shuts it down (the library entry point of
/// `glimmerd`; a signal handler sets `stop`).
pub fn serve(
    cfg: DaemonConfig,
    host: Arc<dyn ToolHost>,
    stop: &AtomicBool,
) -> Result<(), DaemonError> {
    let d = Daemon::start(cfg, host)?;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
    log::info!("shutting down");
    d.shutdown()
}

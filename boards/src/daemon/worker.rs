//! The engine worker: the one thread that owns the model and the [`Engine`], opens and
//! closes sessions, and runs their turns round-robin, one prefill chunk or one decoded token
//! per session at a time, so concurrent sessions interleave.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use glimmer_core::chat::toolcall::{CallParser, Dialect};
use glimmer_core::exec::{Layout, Limits};
use glimmer_core::proto::{ErrorCode, Response, Role, SamplingConfig, ToolChoice};
use glimmer_core::sample::{Sampler, SamplerConfig};

use super::invoke::ToolReply;
use super::outbox::Outbox;
use super::prompt::Prompter;
use super::session::{AnyTool, Parser, Session};
use super::shared::{InFlight, Shared};
use super::DaemonError;
use crate::engine::{Loaded, SlotEngine};
use crate::model_file::ModelFile;

/// Bytes each slot's tool-call parser may hold (the longest call block).
const PARSE_BUF: usize = 16 * 1024;

static ANY_TOOL: AnyTool = AnyTool;

/// The connection a command came from, and where to answer.
#[derive(Clone)]
pub(crate) struct Peer {
    pub conn: u64,
    pub out: Outbox,
}

/// What the worker is asked to do.
pub(crate) enum Cmd {
    Open {
        peer: Peer,
        sampling: SamplingConfig,
        system: Option<String>,
        tools: Option<Vec<String>>,
        constrained: bool,
    },
    Close {
        peer: Peer,
        session: u64,
    },
    Send {
        peer: Peer,
        session: u64,
        role: Role,
        content: String,
        guard: InFlight,
    },
    Cancel {
        peer: Peer,
        session: u64,
    },
    SetToolChoice {
        peer: Peer,
        session: u64,
        choice: ToolChoice,
    },
    ToolDone {
        session: u64,
        turn: u64,
        call_id: u32,
        reply: ToolReply,
    },
    ConnGone {
        conn: u64,
    },
    Shutdown,
}

/// What a session step may use.
pub(crate) struct Ctx<'e, 'f> {
    pub engine: &'e mut dyn SlotEngine<'f>,
    pub prompter: Prompter,
    pub shared: &'e Arc<Shared>,
    pub tx: &'e Sender<Cmd>,
    pub scratch: &'e mut [u32],
    pub chunk: usize,
    pub default_system: Option<&'e str>,
    /// Each token's text, for constrained decoding of tool calls.
    pub token_texts: &'e [Option<String>],
}

/// Loads the model and serves commands until `Shutdown`; `ready` gets the load result.
pub(crate) fn run(
    shared: Arc<Shared>,
    tx: Sender<Cmd>,
    rx: Receiver<Cmd>,
    ready: SyncSender<Result<(), DaemonError>>,
) {
    let cfg = &shared.cfg;
    let file = match ModelFile::open(&cfg.model) {
        Ok(f) => f,
        Err(e) => {
            ready.send(Err(e.into())).ok();
            return;
        }
    };
    let loaded = match Loaded::new(&file) {
        Ok(l) => l,
        Err(e) => {
            ready.send(Err(e.into())).ok();
            return;
        }
    };
    let limits = Limits {
        chunk: cfg.chunk,
        logit_rows: 1,
        ctx: cfg.ctx,
        threads: cfg.threads,
    };
    // The CUDA engine borrows its layout; the others make their own from `limits`.
    let layout = match Layout::new(&loaded.spec, limits) {
        Ok(l) => l,
        Err(e) => {
            ready.send(Err(crate::Error::Layout(e).into())).ok();
            return;
        }
    };
    let mut engine = match crate::engine::build_engine(cfg.backend, &loaded, &layout, cfg.sessions)
    {
        Ok(e) => e,
        Err(e) => {
            ready.send(Err(e.into())).ok();
            return;
        }
    };
    let name = cfg
        .model
        .file_stem()
        .map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned());
    shared.model_name.set(name).ok();
    ready.send(Ok(())).ok();
    log::info!(
        "model {} loaded: {} slots of {} tokens, backend {}",
        cfg.model.display(),
        cfg.sessions,
        cfg.ctx,
        engine.describe()
    );
    let prompter = Prompter::for_arch(loaded.spec.arch);
    let dialect = prompter.dialect().unwrap_or(Dialect::Hermes);
    let mut bufs = vec![vec![0u8; PARSE_BUF]; cfg.sessions];
    let mut parsers: Vec<Parser<'_>> = bufs
        .iter_mut()
        .map(|b| CallParser::new(dialect, &ANY_TOOL, b))
        .collect();
    let mut scratch = vec![0u32; loaded.spec.n_vocab];
    let mut w = Worker {
        sessions: BTreeMap::new(),
        free: (0..cfg.sessions).rev().collect(),
        next_session: 1,
        next_turn: 1,
        cursor: 0,
        n_vocab: loaded.spec.n_vocab,
    };
    let token_texts = super::constrain::token_texts(&loaded.tokenizer);
    let mut cx = Ctx {
        engine: &mut *engine,
        prompter,
        shared: &shared,
        tx: &tx,
        scratch: &mut scratch,
        chunk: cfg.chunk.max(1),
        default_system: cfg.default_system.as_deref(),
        token_texts: &token_texts,
    };
    'serve: loop {
        let busy = w.sessions.values().any(Session::runnable);
        let first = if busy {
            rx.try_recv().ok()
        } else {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(c) => Some(c),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        };
        let mut next = first;
        while let Some(cmd) = next {
            if matches!(cmd, Cmd::Shutdown) {
                break 'serve;
            }
            w.handle(&mut cx, &mut parsers, cmd);
            next = rx.try_recv().ok();
        }
        w.step(&mut cx, &mut parsers);
        let fed = cx.engine.tokens_fed();
        shared.stats.tokens_fed.store(fed, Ordering::Relaxed);
    }
    for s in w.sessions.values_mut() {
        if s.turn.is_some() {
            s.finish(
                &mut parsers[s.slot],
                glimmer_core::proto::StopReason::Cancelled,
            );
        }
        s.out
            .error(ErrorCode::ShuttingDown, Some(s.id), "daemon shutting down");
    }
    log::info!("engine worker stopped");
}

struct Worker {
    sessions: BTreeMap<u64, Session>,
    free: Vec<usize>,
    next_session: u64,
    next_turn: u64,
    cursor: u64,
    n_vocab: usize,
}

impl Worker {
    /// Runs one step of the next runnable session after the last one served.
    fn step(&mut self, cx: &mut Ctx<'_, '_>, parsers: &mut [Parser<'_>]) {
        let after = self.sessions.range(self.cursor + 1..);
        let before = self.sessions.range(..=self.cursor);
        let next = after
            .chain(before)
            .find(|(_, s)| s.runnable())
            .map(|(id, _)| *id);
        let Some(id) = next else { return };
        self.cursor = id;
        if let Some(s) = self.sessions.get_mut(&id) {
            let slot = s.slot;
            s.step(cx, &mut parsers[slot]);
        }
    }

    /// The session `id` if `peer` owns it.
    fn owned(&mut self, peer: &Peer, id: u64) -> Option<&mut Session> {
        match self.sessions.get_mut(&id) {
            Some(s) if s.conn == peer.conn => Some(s),
            Some(_) => {
                peer.out.error(
                    ErrorCode::NotYourSession,
                    Some(id),
                    "session belongs to another connection",
                );
                None
            }
            None => {
                peer.out
                    .error(ErrorCode::UnknownSession, Some(id), "no such session");
                None
            }
        }
    }

    fn handle(&mut self, cx: &mut Ctx<'_, '_>, parsers: &mut [Parser<'_>], cmd: Cmd) {
        match cmd {
            Cmd::Open {
                peer,
                sampling,
                system,
                tools,
                constrained,
            } => self.open(cx, peer, sampling, system, tools, constrained),
            Cmd::Close { peer, session } => {
                if let Some(s) = self.owned(&peer, session) {
                    let slot = s.slot;
                    s.finish(
                        &mut parsers[slot],
                        glimmer_core::proto::StopReason::Cancelled,
                    );
                    self.drop_session(cx, session);
                    peer.out.send(&Response::SessionClosed {
                        session_id: session,
                    });
                }
            }
            Cmd::Send {
                peer,
                session,
                role,
                content,
                guard,
            } => {
                let turn = self.next_turn;
                self.next_turn += 1;
                if let Some(s) = self.owned(&peer, session) {
                    let slot = s.slot;
                    let res = s.begin(cx, &mut parsers[slot], turn, guard, role, &content);
                    if let Err((code, msg)) = res {
                        peer.out.error(code, Some(session), &msg);
                    }
                }
            }
            Cmd::Cancel { peer, session } => {
                if let Some(s) = self.owned(&peer, session) {
                    s.cancel();
                }
            }
            Cmd::SetToolChoice {
                peer,
                session,
                choice,
            } => {
                if let Some(s) = self.owned(&peer, session) {
                    s.tool_choice = choice;
                    peer.out.send(&Response::ToolChoiceSet {
                        session_id: session,
                        choice,
                    });
                }
            }
            Cmd::ToolDone {
                session,
                turn,
                call_id,
                reply,
            } => {
                if let Some(s) = self.sessions.get_mut(&session) {
                    let slot = s.slot;
                    s.tool_done(cx, &mut parsers[slot], turn, call_id, reply);
                }
            }
            Cmd::ConnGone { conn } => {
                let ids: Vec<u64> = self
                    .sessions
                    .values()
                    .filter(|s| s.conn == conn)
                    .map(|s| s.id)
                    .collect();
                for id in ids {
                    self.drop_session(cx, id);
                }
            }
            Cmd::Shutdown => {}
        }
    }

    fn open(
        &mut self,
        cx: &mut Ctx<'_, '_>,
        peer: Peer,
        sampling: SamplingConfig,
        system: Option<String>,
        tools: Option<Vec<String>>,
        constrained: bool,
    ) {
        if !sampling.temperature.is_finite() || !sampling.top_p.is_finite() {
            peer.out
                .error(ErrorCode::BadState, None, "sampling values must be finite");
            return;
        }
        let all = cx.shared.tools.list();
        let tools = match tools {
            None => all,
            Some(names) => {
                let mut picked = Vec::with_capacity(names.len());
                for n in &names {
                    match all.iter().find(|t| &t.name == n) {
                        Some(t) => picked.push(t.clone()),
                        None => {
                            peer.out.error(
                                ErrorCode::UnknownTool,
                                None,
                                &format!("no tool named {n}"),
                            );
                            return;
                        }
                    }
                }
                picked
            }
        };
        let Some(slot) = self.free.pop() else {
            peer.out
                .error(ErrorCode::Busy, None, "no free session slot");
            return;
        };
        cx.engine.reset_slot(slot);
        let id = self.next_session;
        self.next_session += 1;
        let sampler = Sampler::new(SamplerConfig {
            temperature: sampling.temperature,
            top_k: usize::try_from(sampling.top_k).unwrap_or(usize::MAX),
            top_p: sampling.top_p,
            seed: sampling.seed,
        });
        let mut s = Session::new(
            id,
            peer.conn,
            peer.out.clone(),
            slot,
            sampler,
            sampling.max_tokens,
            system,
            tools,
            self.n_vocab,
        );
        s.constrained_tool_args = constrained;
        self.sessions.insert(id, s);
        cx.shared.stats.sessions.fetch_add(1, Ordering::Relaxed);
        peer.out.send(&Response::SessionOpened { session_id: id });
    }

    fn drop_session(&mut self, cx: &mut Ctx<'_, '_>, id: u64) {
        if let Some(s) = self.sessions.remove(&id) {
            cx.engine.reset_slot(s.slot);
            self.free.push(s.slot);
            cx.shared.stats.sessions.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

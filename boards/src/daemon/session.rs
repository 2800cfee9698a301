//! One chat session on one engine slot, and the state machine of its current turn:
//! prefill (one chunk per step), decode (one token per step), tool calls (paused until
//! every result is in), then the results appended to the live cache and decoding resumed.
//!
//! The cache always holds exactly what the model saw: the rendered prompt, the model's own
//! generated tokens, and appended continuations (the template's text after them). Nothing
//! is ever re-rendered or re-fed; [`Turn::tokens_in`] counts the template and message tokens
//! fed, so `tokens_fed` grows by `tokens_in + tokens_out − 1` over a turn that ends on a
//! sampled token the cache does not take (an end-of-turn token, `max_tokens`).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use glimmer_core::chat::toolcall::{CallParser, Dialect, ToolEvent, ToolSet};
use glimmer_core::exec::LogitRows;
use glimmer_core::proto::{
    DoneStats, ErrorCode, EventKind, Response, Role, StopReason, ToolChoice,
};
use glimmer_core::sample::Sampler;

use super::constrain::{self, CallTracker};
use super::invoke::ToolReply;
use super::outbox::Outbox;
use super::prompt;
use super::shared::InFlight;
use super::tools::{self, ToolDesc, ToolFailure};
use super::worker::Ctx;

/// A [`ToolSet`] that accepts every name: the session checks names itself, so that a call
/// to an unknown tool gets an error result instead of passing as text.
pub(crate) struct AnyTool;

impl ToolSet for AnyTool {
    fn has_tool(&self, _name: &str) -> bool {
        true
    }
}

/// The streaming parser of one slot.
pub(crate) type Parser<'b> = CallParser<'b, 'static, AnyTool>;

enum Phase {
    /// Feeding `tokens[at..]`.
    Prefill { tokens: Vec<u32>, at: usize },
    /// Sampling and feeding one token per step.
    Decode,
    /// Waiting for tool results.
    Tools,
}

struct Call {
    call_id: u32,
    name: String,
    reply: Option<ToolReply>,
}

/// The running `Send` of a session.
pub(crate) struct Turn {
    pub id: u64,
    _guard: InFlight,
    phase: Phase,
    /// Template and message tokens fed in this turn (not generated ones).
    pub tokens_in: u32,
    tokens_out: u32,
    tool_calls: u32,
    rounds: u32,
    prefill: Duration,
    decode: Duration,
    utf8: Vec<u8>,
    calls: Vec<Call>,
    cancel: bool,
    /// Arguments written so far after a forced opener that named the tool (`None` when
    /// not forcing): once they form a JSON object, the daemon closes the call itself.
    forced_args: Option<String>,
    /// The closing text the daemon wrote after forced arguments, to feed with the results.
    forced_close: Option<&'static str>,
    /// Whether the generated text is inside a call block, for constrained decoding.
    call: CallTracker,
}

/// A session: its slot, sampler, tools and conversation state.
pub(crate) struct Session {
    pub id: u64,
    pub conn: u64,
    pub out: Outbox,
    pub slot: usize,
    sampler: Sampler,
    max_tokens: u32,
    system: Option<String>,
    tools: Vec<ToolDesc>,
    /// Constrain tool-call arguments to their schema while decoding (requested at open).
    /// The decode step marks where the constraint applies; see `decode_step`.
    pub constrained_tool_args: bool,
    pub tool_choice: ToolChoice,
    started: bool,
    /// The last sampled token, not yet in the cache.
    pending: Option<u32>,
    logits: Vec<f32>,
    pub turn: Option<Turn>,
}

/// Why a `Send` was refused before anything was fed.
pub(crate) type Refusal = (ErrorCode, String);

impl Session {
    /// A fresh session on `slot`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: u64,
        conn: u64,
        out: Outbox,
        slot: usize,
        sampler: Sampler,
        max_tokens: u32,
        system: Option<String>,
        tools: Vec<ToolDesc>,
        n_vocab: usize,
    ) -> Self {
        Session {
            id,
            conn,
            out,
            slot,
            sampler,
            max_tokens,
            system,
            tools,
            constrained_tool_args: false,
            tool_choice: ToolChoice::Auto,
            started: false,
            pending: None,
            logits: vec![0.0; n_vocab],
            turn: None,
        }
    }

    /// Whether a step would do work now.
    pub fn runnable(&self) -> bool {
        self.turn
            .as_ref()
            .is_some_and(|t| !matches!(t.phase, Phase::Tools) || t.cancel)
    }

    fn event(&self, kind: EventKind<'_>) {
        self.out.send(&Response::Event {
            session_id: self.id,
            kind,
        });
    }

    /// Starts a turn for a `Send`: renders and tokenizes the new text, checks it fits.
    pub fn begin(
        &mut self,
        cx: &mut Ctx<'_, '_>,
        parser: &mut Parser<'_>,
        turn_id: u64,
        guard: InFlight,
        role: Role,
        content: &str,
    ) -> Result<(), Refusal> {
        if self.turn.is_some() {
            return Err((ErrorCode::Busy, "the session is generating".into()));
        }
        // The rendered prompt is tokenized with control tokens recognised, so a message must
        // not carry their text: it could close its own turn and forge another role's.
        if let Some(t) = control_text(&cx.engine.loaded().tokenizer, content) {
            return Err((
                ErrorCode::PermissionDenied,
                format!("message text contains the control token {t:?}"),
            ));
        }
        let internal = |e: &dyn std::fmt::Display| (ErrorCode::Internal, e.to_string());
        let msg = prompt::message(role, content);
        let mut text = if self.started {
            cx.prompter.after_text(msg)
        } else {
            let system = self.system.as_deref().or(cx.default_system);
            cx.prompter.first(system, &self.tools, msg)
        }
        .map_err(|e| internal(&e))?;
        let force = self.tool_choice == ToolChoice::Required && !self.tools.is_empty();
        let forced_name = force && self.tools.len() == 1;
        let opener = if force {
            let only = match self.tools.as_slice() {
                [t] => Some(t.name.as_str()),
                _ => None,
            };
            let o = cx.prompter.call_opener(only).map_err(|e| internal(&e))?;
            text.push_str(&o);
            Some(o)
        } else {
            None
        };
        let tok = &cx.engine.loaded().tokenizer;
        let new = tok
            .encode(&text, !self.started, true)
            .map_err(|e| internal(&e))?;
        let mut tokens = Vec::with_capacity(new.len() + 1);
        tokens.extend(self.pending.filter(|&p| !tok.is_eog(p)));
        tokens.extend_from_slice(&new);
        self.check_room(cx, tokens.len())?;
        let tokens_in = u32::try_from(new.len()).unwrap_or(u32::MAX);
        let stats = &cx.shared.stats;
        stats
            .prefill_total
            .fetch_add(new.len() as u64, Ordering::Relaxed);
        self.started = true;
        self.pending = None;
        parser.reset();
        let call = match &opener {
            Some(o) => CallTracker::inside_after(o.split_once("<tool_call>").map_or("", |x| x.1)),
            None => CallTracker::default(),
        };
        if let Some(o) = opener {
            parser.push(&o).map_err(|e| internal(&e))?;
        }
        self.turn = Some(Turn {
            id: turn_id,
            _guard: guard,
            phase: Phase::Prefill { tokens, at: 0 },
            tokens_in,
            tokens_out: 0,
            tool_calls: 0,
            rounds: 0,
            prefill: Duration::ZERO,
            decode: Duration::ZERO,
            utf8: Vec::new(),
            calls: Vec::new(),
            cancel: false,
            forced_args: forced_name.then(String::new),
            forced_close: None,
            call,
        });
        Ok(())
    }

    fn check_room(&self, cx: &Ctx<'_, '_>, n: usize) -> Result<(), Refusal> {
        let pos = cx.engine.slot_pos(self.slot);
        if pos.saturating_add(n).saturating_add(1) > cx.engine.ctx() {
            return Err((
                ErrorCode::ContextFull,
                format!(
                    "{n} more tokens do not fit: {pos} of {} positions used",
                    cx.engine.ctx()
                ),
            ));
        }
        Ok(())
    }

    /// Asks the running turn to stop (at the end of a prefill in progress, so the cache
    /// stays whole).
    pub fn cancel(&mut self) {
        if let Some(t) = &mut self.turn {
            t.cancel = true;
        }
    }

    /// One unit of work: a prefill chunk or one decoded token.
    pub fn step(&mut self, cx: &mut Ctx<'_, '_>, parser: &mut Parser<'_>) {
        let Some(turn) = &mut self.turn else { return };
        match &mut turn.phase {
            Phase::Prefill { tokens, at } => {
                let end = at.saturating_add(cx.chunk).min(tokens.len());
                let last = end == tokens.len();
                let rows = if last {
                    LogitRows::Last
                } else {
                    LogitRows::None
                };
                let t0 = Instant::now();
                let res =
                    cx.engine
                        .forward_slot(self.slot, &tokens[*at..end], rows, &mut self.logits);
                turn.prefill += t0.elapsed();
                *at = end;
                let fed = cx.engine.tokens_fed();
                cx.shared.stats.tokens_fed.store(fed, Ordering::Relaxed);
                if let Err(e) = res {
                    return self.fail(parser, ErrorCode::Internal, &e.to_string());
                }
                if last {
                    turn.phase = Phase::Decode;
                }
            }
            Phase::Decode | Phase::Tools if turn.cancel => {
                self.finish(parser, StopReason::Cancelled)
            }
            Phase::Decode => self.decode_step(cx, parser),
            Phase::Tools => {}
        }
    }

    fn decode_step(&mut self, cx: &mut Ctx<'_, '_>, parser: &mut Parser<'_>) {
        // Constrained decoding of tool-call arguments: inside a call block the logits are
        // restricted to tokens that keep the call valid for the session's tools.
        let t0 = Instant::now();
        let mut chosen = None;
        let dialect = cx.prompter.dialect();
        if let (true, Some(d @ Dialect::Hermes), Some(turn)) =
            (self.constrained_tool_args, dialect, &self.turn)
        {
            if let Some(call) = turn.call.call_text() {
                let greedy = self.sampler.config().temperature <= 0.0;
                let texts = cx.token_texts;
                match constrain::constrain(
                    &self.tools,
                    d,
                    call,
                    &mut self.logits,
                    texts,
                    cx.scratch,
                    greedy,
                ) {
                    Ok(t) => chosen = t,
                    Err(e) => log::warn!("session {}: {e}; decoding unconstrained", self.id),
                }
            }
        }
        let sampled = match chosen {
            Some(t) => Ok(t),
            None => self.sampler.sample(&self.logits, cx.scratch),
        };
        let tok = match sampled {
            Ok(t) => t,
            Err(e) => return self.fail(parser, ErrorCode::Internal, &format!("{e:?}")),
        };
        cx.shared.stats.tokens_total.fetch_add(1, Ordering::Relaxed);
        let tokenizer = &cx.engine.loaded().tokenizer;
        let Some(turn) = &mut self.turn else { return };
        turn.tokens_out = turn.tokens_out.saturating_add(1);
        self.pending = Some(tok);
        if tokenizer.is_eog(tok) {
            return self.finish(parser, StopReason::EndOfTurn);
        }
        match tokenizer.decode_token(tok) {
            Ok(b) => {
                turn.utf8.extend_from_slice(&b);
                turn.call.push(&String::from_utf8_lossy(&b));
                close_forced_args(turn, &b);
            }
            Err(e) => return self.fail(parser, ErrorCode::Internal, &e.to_string()),
        }
        let calls = self.drain_utf8(parser, false);
        if !calls.is_empty() {
            return self.start_tools(cx, parser, calls);
        }
        let Some(turn) = &mut self.turn else { return };
        if self.max_tokens > 0 && turn.tokens_out >= self.max_tokens {
            return self.finish(parser, StopReason::MaxTokens);
        }
        if cx.engine.slot_pos(self.slot) + 1 > cx.engine.ctx() {
            return self.finish(parser, StopReason::ContextFull);
        }
        let res = cx
            .engine
            .forward_slot(self.slot, &[tok], LogitRows::Last, &mut self.logits);
        if let Err(e) = res {
            return self.fail(parser, ErrorCode::Internal, &e.to_string());
        }
        self.pending = None;
        turn.decode += t0.elapsed();
        let fed = cx.engine.tokens_fed();
        cx.shared.stats.tokens_fed.store(fed, Ordering::Relaxed);
    }

    /// Passes the complete UTF-8 text held to the parser (all of it with `all`) and sends
    /// the text events; returns the calls found as `(name, raw JSON args or error)`.
    fn drain_utf8(&mut self, parser: &mut Parser<'_>, all: bool) -> Vec<ParsedOwned> {
        let Some(turn) = &mut self.turn else {
            return Vec::new();
        };
        let valid = match std::str::from_utf8(&turn.utf8) {
            Ok(_) => turn.utf8.len(),
            Err(e) if e.error_len().is_none() && !all => e.valid_up_to(),
            Err(e) => e.valid_up_to(),
        };
        let text = String::from_utf8_lossy(&turn.utf8[..valid]).into_owned();
        turn.utf8.drain(..valid);
        if self.tool_choice == ToolChoice::None {
            if !text.is_empty() {
                self.event(EventKind::Token { text: &text });
            }
            return Vec::new();
        }
        if parser.push(&text).is_err() {
            log::warn!("session {}: tool-call block too long; dropped", self.id);
            parser.reset();
        }
        if all {
            parser.finish();
        }
        let mut calls = Vec::new();
        while let Some(ev) = parser.next_event() {
            match ev {
                ToolEvent::Text(t) => self.event(EventKind::Token { text: t }),
                ToolEvent::Call(c) => calls.push(ParsedOwned::from(&self.tools, c)),
                ToolEvent::Malformed(m) => {
                    log::info!("session {}: malformed tool call dropped: {m:?}", self.id)
                }
            }
        }
        calls
    }

    fn start_tools(
        &mut self,
        cx: &mut Ctx<'_, '_>,
        parser: &mut Parser<'_>,
        calls: Vec<ParsedOwned>,
    ) {
        let max_rounds = cx.shared.cfg.limits.max_tool_rounds;
        let Some(turn) = &mut self.turn else { return };
        turn.rounds += 1;
        if turn.rounds > max_rounds {
            return self.finish(parser, StopReason::ToolLimit);
        }
        turn.phase = Phase::Tools;
        let turn_id = turn.id;
        let calls: Vec<(u32, ParsedOwned)> = calls
            .into_iter()
            .map(|c| (cx.shared.call_id(), c))
            .collect();
        turn.calls = calls
            .iter()
            .map(|(id, c)| Call {
                call_id: *id,
                name: c.name.clone(),
                reply: None,
            })
            .collect();
        let n = u32::try_from(calls.len()).unwrap_or(u32::MAX);
        turn.tool_calls = turn.tool_calls.saturating_add(n);
        let stats = &cx.shared.stats;
        stats
            .tool_calls_total
            .fetch_add(u64::from(n), Ordering::Relaxed);
        for (call_id, c) in calls {
            let args_shown = match &c.args {
                Ok(a) => a.as_str(),
                Err((raw, _)) => raw.as_str(),
            };
            self.event(EventKind::ToolCall {
                call_id,
                name: &c.name,
                args_json: args_shown,
            });
            let checked = c.args.map_err(|(_, f)| f).and_then(|args| {
                let (_, target) = cx.shared.tools.lookup(&c.name).ok_or_else(|| {
                    ToolFailure::new(ErrorCode::UnknownTool, format!("no tool named {}", c.name))
                })?;
                Ok((args, target))
            });
            match checked {
                Err(f) => self.tool_done(cx, parser, turn_id, call_id, ToolReply::failed(&f)),
                Ok((args, target)) => {
                    let (tx, session) = (cx.tx.clone(), self.id);
                    super::invoke::spawn(cx.shared, target, c.name, args, move |reply| {
                        let cmd = super::worker::Cmd::ToolDone {
                            session,
                            turn: turn_id,
                            call_id,
                            reply,
                        };
                        tx.send(cmd).ok();
                    });
                }
            }
        }
    }

    /// Takes a tool result; once all results of the round are in, appends them to the cache.
    pub fn tool_done(
        &mut self,
        cx: &mut Ctx<'_, '_>,
        parser: &mut Parser<'_>,
        turn_id: u64,
        call_id: u32,
        reply: ToolReply,
    ) {
        let Some(turn) = &mut self.turn else { return };
        if turn.id != turn_id || !matches!(turn.phase, Phase::Tools) {
            return;
        }
        let Some(call) = turn.calls.iter_mut().find(|c| c.call_id == call_id) else {
            return;
        };
        // A result goes into the prompt as text, which is tokenized with control tokens
        // recognised: like a message, it must not carry their text (it could close the tool
        // turn and forge another role's). Such a result reaches the model, and the client, as
        // a typed failure instead.
        let reply = match control_text(&cx.engine.loaded().tokenizer, &reply.content) {
            Some(t) => ToolReply::failed(&ToolFailure::new(
                ErrorCode::PermissionDenied,
                format!("the tool result contains the control token {t:?}"),
            )),
            None => reply,
        };
        let event = EventKind::ToolResult {
            call_id,
            ok: reply.ok,
            content: &reply.content,
        };
        self.out.send(&Response::Event {
            session_id: self.id,
            kind: event,
        });
        call.reply = Some(reply);
        if turn.calls.iter().all(|c| c.reply.is_some()) && !turn.cancel {
            self.resume(cx, parser);
        }
    }

    /// Appends the round's results (the template's exact text after the call block) and
    /// goes back to prefill.
    fn resume(&mut self, cx: &mut Ctx<'_, '_>, parser: &mut Parser<'_>) {
        let Some(turn) = &self.turn else { return };
        let results: Vec<(&str, &str)> = turn
            .calls
            .iter()
            .map(|c| {
                let content = c.reply.as_ref().map_or("", |r| r.content.as_str());
                (c.name.as_str(), content)
            })
            .collect();
        let tok = &cx.engine.loaded().tokenizer;
        let text = match cx.prompter.after_calls(&results) {
            Ok(t) => t,
            Err(e) => return self.fail_now(cx, ErrorCode::Internal, &e.to_string()),
        };
        let close = turn.forced_close.unwrap_or("");
        let new = match tok.encode(close, false, true).and_then(|mut c| {
            c.extend(tok.encode(&text, false, true)?);
            Ok(c)
        }) {
            Ok(t) => t,
            Err(e) => return self.fail_now(cx, ErrorCode::Internal, &e.to_string()),
        };
        let mut tokens = Vec::with_capacity(new.len() + 1);
        tokens.extend(self.pending.filter(|&p| !tok.is_eog(p)));
        tokens.extend_from_slice(&new);
        if let Err((code, msg)) = self.check_room(cx, tokens.len()) {
            self.out.error(code, Some(self.id), &msg);
            return self.done(StopReason::ContextFull);
        }
        self.pending = None;
        parser.reset();
        let stats = &cx.shared.stats;
        stats
            .prefill_total
            .fetch_add(new.len() as u64, Ordering::Relaxed);
        if let Some(turn) = &mut self.turn {
            turn.tokens_in = turn
                .tokens_in
                .saturating_add(u32::try_from(new.len()).unwrap_or(u32::MAX));
            turn.utf8.clear();
            turn.forced_close = None;
            turn.phase = Phase::Prefill { tokens, at: 0 };
        }
    }

    fn fail_now(&mut self, _cx: &mut Ctx<'_, '_>, code: ErrorCode, msg: &str) {
        self.out.error(code, Some(self.id), msg);
        self.done(StopReason::Error);
    }

    fn fail(&mut self, parser: &mut Parser<'_>, code: ErrorCode, msg: &str) {
        log::error!("session {}: {code}: {msg}", self.id);
        parser.reset();
        self.out.error(code, Some(self.id), msg);
        self.done(StopReason::Error);
    }

    /// Ends the turn: flushes held text and sends `Done`.
    pub fn finish(&mut self, parser: &mut Parser<'_>, reason: StopReason) {
        let calls = self.drain_utf8(parser, true);
        if !calls.is_empty() {
            log::info!("session {}: tool call at end of turn ignored", self.id);
        }
        parser.reset();
        self.done(reason);
    }

    fn done(&mut self, reason: StopReason) {
        let Some(turn) = self.turn.take() else { return };
        let ms = |d: Duration| u32::try_from(d.as_millis()).unwrap_or(u32::MAX);
        let stats = DoneStats {
            tokens_in: turn.tokens_in,
            tokens_out: turn.tokens_out,
            prefill_ms: ms(turn.prefill),
            decode_ms: ms(turn.decode),
            tool_calls: turn.tool_calls,
            stop_reason: reason,
        };
        self.event(EventKind::Done { stats });
    }
}

/// The first control token (`<|im_start|>`, `<end_of_turn>`, …) whose text appears in
/// `content`, if any.
fn control_text(tok: &crate::tokenizer::Tokenizer, content: &str) -> Option<String> {
    let ids = tok.encode(content, false, true).ok()?;
    let id = ids.into_iter().find(|&id| tok.is_control(id))?;
    Some(tok.token_text(id).unwrap_or("?").to_owned())
}

/// Follows the arguments written after a forced opener that named the tool; once they form
/// a JSON object, writes the call's closing text (`}` and the closing tag) into the turn's
/// text, so a small model that stops after the arguments still makes a well-formed call.
/// The closing text is fed to the cache with the results (see `resume`).
fn close_forced_args(turn: &mut Turn, piece: &[u8]) {
    let Some(args) = &mut turn.forced_args else {
        return;
    };
    args.push_str(&String::from_utf8_lossy(piece));
    let b = args.as_bytes();
    let start = glimmer_core::chat::json::skip_ws(b, 0);
    match b.get(start) {
        None => return,
        Some(b'{') => {}
        Some(_) => {
            turn.forced_args = None;
            return;
        }
    }
    match glimmer_core::chat::json::value_end(b, start, 0) {
        Ok(end) => {
            let close = if args[end..].contains('}') {
                "\n</tool_call>"
            } else {
                "}\n</tool_call>"
            };
            turn.utf8.extend_from_slice(close.as_bytes());
            turn.forced_close = Some(close);
            turn.forced_args = None;
        }
        Err(glimmer_core::chat::json::JsonError::Eof { .. }) => {}
        Err(_) => turn.forced_args = None,
    }
}

/// A parsed call, owned: its name and its checked arguments (or the raw text and why not).
struct ParsedOwned {
    name: String,
    args: Result<String, (String, ToolFailure)>,
}

impl ParsedOwned {
    fn from(allowed: &[ToolDesc], c: glimmer_core::chat::toolcall::ParsedCall<'_>) -> Self {
        use glimmer_core::chat::toolcall::CallArgs;
        let raw = match c.args {
            CallArgs::Json(s) | CallArgs::Qwen(s) | CallArgs::Atem(s) => s.to_string(),
        };
        let args = match allowed.iter().find(|t| t.name == c.name) {
            None => Err(ToolFailure::new(
                ErrorCode::UnknownTool,
                format!("no tool named {} in this session", c.name),
            )),
            Some(t) => tools::check_args(t, &c.args),
        };
        ParsedOwned {
            name: c.name.to_string(),
            args: args.map_err(|f| (raw, f)),
        }
    }
}

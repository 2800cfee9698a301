//! One client connection: peer check, frame reading with a partial-frame timeout, and the
//! requests answered here (hello, tools, stats) or passed to the engine worker.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use glimmer_core::proto::{
    encode_frame, ErrorCode, FrameDecoder, Request, Response, ToolInfo, LEN_PREFIX, MAX_FRAME,
    MAX_TOOLS, PROTOCOL_VERSION,
};

use super::invoke::{self, ToolReply};
use super::outbox::Outbox;
use super::shared::{InFlight, Shared};
use super::tools::{self, ToolDesc};
use super::worker::{Cmd, Peer};

/// How often a blocked read wakes up to check timeouts and shutdown.
const POLL: Duration = Duration::from_millis(50);

/// The daemon's name and version, as `HelloOk` reports it.
pub const SERVER_NAME: &str = concat!("glimmerd/", env!("CARGO_PKG_VERSION"));

/// Serves `stream` until it closes; `conn` is its id.
pub(crate) fn serve(shared: Arc<Shared>, stream: UnixStream, conn: u64) {
    let Some(uid) = admit(&shared, &stream) else {
        return;
    };
    let out = match stream
        .try_clone()
        .map(|s| Outbox::spawn(s, shared.cfg.limits.outbox_frames))
    {
        Ok(Ok(o)) => o,
        Ok(Err(e)) | Err(e) => {
            log::error!("connection {conn}: {e}");
            release(&shared, uid);
            return;
        }
    };
    let mut c = Conn {
        shared: &shared,
        peer: Peer { conn, out },
        hello: false,
        inflight: Arc::new(AtomicUsize::new(0)),
    };
    c.read_loop(stream);
    shared.to_worker(Cmd::ConnGone { conn });
    shared.tools.forget_conn(conn);
    shared
        .calls
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|_, p| p.conn != conn);
    release(&shared, uid);
    log::debug!("connection {conn} closed");
}

/// Checks the peer's credentials and the per-uid limit; answers and closes on refusal.
fn admit(shared: &Shared, stream: &UnixStream) -> Option<u32> {
    let refuse = |code: ErrorCode, msg: &str| {
        let mut buf = vec![0u8; 512];
        let resp = Response::Error {
            code,
            session_id: None,
            message: msg,
        };
        if let Ok(n) = encode_frame(&resp, &mut buf) {
            let mut s = stream;
            s.write_all(&buf[..n]).ok();
        }
        log::warn!("refused a connection: {msg}");
        None
    };
    let (uid, gid) = match super::listen::peer_cred(stream) {
        Ok(c) => c,
        Err(e) => {
            return refuse(
                ErrorCode::PermissionDenied,
                &format!("no peer credentials: {e}"),
            )
        }
    };
    let cfg = &shared.cfg;
    if !cfg.allow_uids.contains(&uid) && !cfg.allow_gids.contains(&gid) {
        return refuse(
            ErrorCode::PermissionDenied,
            &format!("uid {uid} / gid {gid} may not connect"),
        );
    }
    let mut per_uid = shared.per_uid.lock().unwrap_or_else(|e| e.into_inner());
    let n = per_uid.entry(uid).or_insert(0);
    if *n >= cfg.limits.max_conns_per_uid {
        drop(per_uid);
        return refuse(
            ErrorCode::Busy,
            &format!("too many connections for uid {uid}"),
        );
    }
    *n += 1;
    shared
        .stats
        .connections_total
        .fetch_add(1, Ordering::Relaxed);
    Some(uid)
}

fn release(shared: &Shared, uid: u32) {
    let mut per_uid = shared.per_uid.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = per_uid.get_mut(&uid) {
        *n = n.saturating_sub(1);
    }
}

struct Conn<'s> {
    shared: &'s Arc<Shared>,
    peer: Peer,
    hello: bool,
    inflight: Arc<AtomicUsize>,
}

impl Conn<'_> {
    fn out(&self) -> &Outbox {
        &self.peer.out
    }

    fn read_loop(&mut self, mut stream: UnixStream) {
        if stream.set_read_timeout(Some(POLL)).is_err() {
            return;
        }
        let mut buf = vec![0u8; LEN_PREFIX + MAX_FRAME];
        let mut dec = FrameDecoder::new(&mut buf);
        let mut rbuf = vec![0u8; 16 * 1024];
        let mut partial_since: Option<Instant> = None;
        let frame_timeout = self.shared.cfg.limits.frame_timeout;
        loop {
            if self.shared.stop_conns.load(Ordering::Relaxed) {
                self.out()
                    .error(ErrorCode::ShuttingDown, None, "daemon shutting down");
                return;
            }
            if self.out().is_dead() {
                return;
            }
            let n = match stream.read(&mut rbuf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => 0,
                Err(e) if e.kind() == ErrorKind::Interrupted => 0,
                Err(_) => return,
            };
            let mut taken = 0;
            loop {
                taken += dec.push(&rbuf[taken..n]);
                loop {
                    match dec.next_frame() {
                        Ok(Some(frame)) => match frame.request() {
                            Ok(req) => self.handle(req),
                            Err(e) => {
                                self.out().error(e.code(), None, &e.to_string());
                            }
                        },
                        Ok(None) => break,
                        Err(e) => {
                            self.out().error(e.code(), None, &e.to_string());
                            if e.is_fatal() {
                                return;
                            }
                        }
                    }
                }
                if taken >= n {
                    break;
                }
            }
            if dec.buffered() == 0 {
                partial_since = None;
            } else {
                let since = *partial_since.get_or_insert_with(Instant::now);
                if since.elapsed() > frame_timeout {
                    self.out().error(
                        ErrorCode::Timeout,
                        None,
                        "partial frame not completed in time",
                    );
                    return;
                }
            }
        }
    }

    fn handle(&mut self, req: Request<'_>) {
        let out = self.peer.out.clone();
        match req {
            Request::Hello { version, .. } if !self.hello => {
                if version != u16::from(PROTOCOL_VERSION) {
                    out.error(
                        ErrorCode::BadVersion,
                        None,
                        &format!("this daemon speaks protocol {PROTOCOL_VERSION}"),
                    );
                    return;
                }
                self.hello = true;
                let model = self.shared.model_name.get().map_or("", String::as_str);
                out.send(&Response::HelloOk {
                    server: SERVER_NAME,
                    version: u16::from(PROTOCOL_VERSION),
                    model,
                    board: &self.shared.cfg.board,
                });
            }
            Request::Hello { .. } => {
                out.error(ErrorCode::BadState, None, "Hello sent twice");
            }
            _ if !self.hello => {
                out.error(ErrorCode::BadState, None, "send Hello first");
            }
            Request::OpenSession {
                sampling,
                system,
                tools,
                constrained_tool_args,
            } => {
                let cmd = Cmd::Open {
                    peer: self.peer.clone(),
                    sampling,
                    system: system.map(str::to_string),
                    tools: tools.map(|v| v.iter().map(|s| s.to_string()).collect()),
                    constrained: constrained_tool_args,
                };
                self.to_worker(cmd);
            }
            Request::CloseSession { session_id } => self.to_worker(Cmd::Close {
                peer: self.peer.clone(),
                session: session_id,
            }),
            Request::Send {
                session_id,
                role,
                content,
            } => {
                let Some(guard) = self.take_inflight(Some(session_id)) else {
                    return;
                };
                self.to_worker(Cmd::Send {
                    peer: self.peer.clone(),
                    session: session_id,
                    role,
                    content: content.to_string(),
                    guard,
                });
            }
            Request::Cancel { session_id } => self.to_worker(Cmd::Cancel {
                peer: self.peer.clone(),
                session: session_id,
            }),
            Request::SetToolChoice { session_id, choice } => self.to_worker(Cmd::SetToolChoice {
                peer: self.peer.clone(),
                session: session_id,
                choice,
            }),
            Request::InvokeTool { name, args_json } => self.invoke(name, args_json),
            Request::ListTools => {
                let list = self.shared.tools.list();
                let mut infos = heapless::Vec::<ToolInfo<'_>, MAX_TOOLS>::new();
                for t in &list {
                    let info = ToolInfo {
                        name: &t.name,
                        description: &t.description,
                        schema_json: &t.schema_json,
                    };
                    if infos.push(info).is_err() {
                        break;
                    }
                }
                if !out.send(&Response::Tools { list: infos }) {
                    out.error(ErrorCode::Internal, None, "tool list too large for a frame");
                }
            }
            Request::RegisterTool {
                name,
                description,
                schema_json,
            } => {
                let desc = ToolDesc {
                    name: name.to_string(),
                    description: description.to_string(),
                    schema_json: schema_json.to_string(),
                };
                match self
                    .shared
                    .tools
                    .register(desc, self.peer.conn, out.clone())
                {
                    Ok(()) => {
                        out.send(&Response::Registered { name });
                    }
                    Err(f) => {
                        out.error(f.code, None, &f.message);
                    }
                }
            }
            Request::ToolResult {
                call_id,
                ok,
                content,
            } => {
                let mut calls = self.shared.calls.lock().unwrap_or_else(|e| e.into_inner());
                match calls.remove(&call_id) {
                    Some(p) if p.conn == self.peer.conn => {
                        let reply = ToolReply {
                            ok,
                            code: (!ok).then_some(ErrorCode::ToolFailed),
                            content: content.to_string(),
                        };
                        p.reply.try_send(reply).ok();
                    }
                    Some(p) => {
                        calls.insert(call_id, p);
                        out.error(ErrorCode::PermissionDenied, None, "not your tool call");
                    }
                    None => {
                        out.error(ErrorCode::BadState, None, "no such pending tool call");
                    }
                }
            }
            Request::Stats => {
                out.send(&Response::ServerStats(self.shared.server_stats()));
            }
        }
    }

    fn take_inflight(&self, session: Option<u64>) -> Option<InFlight> {
        let max = self.shared.cfg.limits.max_inflight;
        let g = InFlight::try_take(&self.inflight, max);
        if g.is_none() {
            self.out()
                .error(ErrorCode::Busy, session, "too many requests in flight");
        }
        g
    }

    fn to_worker(&self, cmd: Cmd) {
        if !self.shared.to_worker(cmd) {
            self.out()
                .error(ErrorCode::ShuttingDown, None, "the engine has stopped");
        }
    }

    fn invoke(&self, name: &str, args_json: &str) {
        let out = self.out().clone();
        let Some((desc, target)) = self.shared.tools.lookup(name) else {
            out.error(
                ErrorCode::UnknownTool,
                None,
                &format!("no tool named {name}"),
            );
            return;
        };
        let args = match tools::check_json_args(&desc, args_json) {
            Ok(a) => a,
            Err(f) => {
                out.error(f.code, None, &f.message);
                return;
            }
        };
        let Some(guard) = self.take_inflight(None) else {
            return;
        };
        invoke::spawn(self.shared, target, name.to_string(), args, move |reply| {
            let _guard = guard;
            match reply.code {
                None => out.send(&Response::ToolOutput {
                    ok: true,
                    content: &reply.content,
                }),
                Some(code) => out.error(code, None, &reply.content),
            };
        });
    }
}

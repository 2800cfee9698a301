//! A client for `glimmerd`: connect, say hello, open sessions, send messages and iterate the
//! streamed events, run tools, register tools and answer their calls, read counters.
//!
//! ```no_run
//! use glimmer_boards::client::{Client, Event, SessionOptions};
//! use glimmer_core::proto::Role;
//! let mut c = Client::connect("/run/glimmer/glimmerd.sock".as_ref())?;
//! c.hello("example/0.1")?;
//! let s = c.open_session(&SessionOptions::default())?;
//! let done = c.chat(s, Role::User, "Hi!", |ev| {
//!     if let Event::Token(t) = ev {
//!         print!("{t}");
//!     }
//! })?;
//! println!("\n{} tokens", done.tokens_out);
//! # Ok::<(), glimmer_boards::client::ClientError>(())
//! ```

mod reply;

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use glimmer_core::proto::{
    encode_frame, DoneStats, ErrorCode, Frame, FrameKind, ProtoError, Request, Role,
    SamplingConfig, ServerStats, ToolChoice, HEADER_LEN, LEN_PREFIX, MAX_FRAME, MAX_TOOLS,
    PROTOCOL_VERSION,
};

pub use reply::{ClientCall, Event, Reply};

use crate::daemon::ToolDesc;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The socket failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// A frame could not be encoded or decoded.
    #[error("protocol: {0}")]
    Proto(ProtoError),
    /// The daemon answered with an error.
    #[error("daemon error {code}: {message}")]
    Server {
        /// Stable code.
        code: ErrorCode,
        /// The session concerned.
        session_id: Option<u64>,
        /// Detail.
        message: String,
    },
    /// The daemon answered something this request does not expect.
    #[error("unexpected reply: {0}")]
    Unexpected(String),
    /// The daemon closed the connection.
    #[error("the daemon closed the connection")]
    Closed,
    /// Too many names for one message.
    #[error("too many tools (at most {MAX_TOOLS})")]
    TooManyTools,
}

impl ClientError {
    /// The daemon's error code, if this is a daemon error.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Server { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// How to open a session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionOptions {
    /// Sampling settings.
    pub sampling: SamplingConfig,
    /// System prompt (`None`: the daemon's default).
    pub system: Option<String>,
    /// Tools the model may call (`None`: all).
    pub tools: Option<Vec<String>>,
    /// Ask for constrained decoding of tool-call arguments.
    pub constrained_tool_args: bool,
}

/// A connection to `glimmerd`.
pub struct Client {
    stream: UnixStream,
    /// Replies read while waiting for something else.
    queued: VecDeque<Reply>,
}

impl Client {
    /// Connects to the daemon's socket.
    pub fn connect(path: &Path) -> Result<Client, ClientError> {
        Ok(Client {
            stream: UnixStream::connect(path)?,
            queued: VecDeque::new(),
        })
    }

    /// The underlying socket (for timeouts).
    pub fn stream(&self) -> &UnixStream {
        &self.stream
    }

    /// Sends one request.
    pub fn request(&mut self, req: &Request<'_>) -> Result<(), ClientError> {
        let mut buf = vec![0u8; LEN_PREFIX + MAX_FRAME];
        let n = encode_frame(req, &mut buf).map_err(ClientError::Proto)?;
        self.stream.write_all(&buf[..n])?;
        Ok(())
    }

    /// Writes raw bytes (for tests of malformed input).
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        self.stream.write_all(bytes)?;
        Ok(())
    }

    /// The next reply (a queued one first).
    pub fn recv(&mut self) -> Result<Reply, ClientError> {
        if let Some(r) = self.queued.pop_front() {
            return Ok(r);
        }
        self.read_reply()
    }

    fn read_reply(&mut self) -> Result<Reply, ClientError> {
        let mut prefix = [0u8; LEN_PREFIX];
        read_full(&mut self.stream, &mut prefix)?;
        let len = u32::from_le_bytes(prefix);
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len > MAX_FRAME {
            return Err(ClientError::Proto(ProtoError::FrameTooLarge {
                len: u32::from_le_bytes(prefix),
                max: MAX_FRAME as u32,
            }));
        }
        if len < HEADER_LEN {
            return Err(ClientError::Proto(ProtoError::BadFrame));
        }
        let mut body = vec![0u8; len];
        read_full(&mut self.stream, &mut body)?;
        if body[0] != PROTOCOL_VERSION {
            return Err(ClientError::Proto(ProtoError::BadVersion { got: body[0] }));
        }
        let kind = FrameKind::from_u8(body[1]).ok_or(ClientError::Proto(ProtoError::BadFrame))?;
        let frame = Frame {
            kind,
            body: &body[HEADER_LEN..],
        };
        let resp = frame.response().map_err(ClientError::Proto)?;
        Ok(Reply::from(resp))
    }

    /// Sends `req` and returns the first reply that is not an event, a client-tool call or
    /// an error about a session (those are queued for [`recv`](Self::recv)).
    fn call(&mut self, req: &Request<'_>) -> Result<Reply, ClientError> {
        self.request(req)?;
        let mine = match req {
            Request::CloseSession { session_id } | Request::SetToolChoice { session_id, .. } => {
                Some(*session_id)
            }
            _ => None,
        };
        loop {
            match self.read_reply()? {
                r @ (Reply::Event { .. } | Reply::CallClientTool(_)) => self.queued.push_back(r),
                r @ Reply::Error {
                    session_id: Some(id),
                    ..
                } if mine != Some(id) => self.queued.push_back(r),
                Reply::Error {
                    code,
                    session_id,
                    message,
                } => {
                    return Err(ClientError::Server {
                        code,
                        session_id,
                        message,
                    })
                }
                r => return Ok(r),
            }
        }
    }

    /// Says hello; returns `(server, model, board)`.
    pub fn hello(&mut self, client: &str) -> Result<(String, String, String), ClientError> {
        let req = Request::Hello {
            client,
            version: u16::from(PROTOCOL_VERSION),
        };
        match self.call(&req)? {
            Reply::HelloOk {
                server,
                model,
                board,
                ..
            } => Ok((server, model, board)),
            r => Err(unexpected(r)),
        }
    }

    /// Opens a session; returns its id.
    pub fn open_session(&mut self, o: &SessionOptions) -> Result<u64, ClientError> {
        let tools = match &o.tools {
            None => None,
            Some(names) => {
                let mut v = heapless::Vec::new();
                for n in names {
                    v.push(n.as_str()).map_err(|_| ClientError::TooManyTools)?;
                }
                Some(v)
            }
        };
        let req = Request::OpenSession {
            sampling: o.sampling,
            system: o.system.as_deref(),
            tools,
            constrained_tool_args: o.constrained_tool_args,
        };
        match self.call(&req)? {
            Reply::SessionOpened(id) => Ok(id),
            r => Err(unexpected(r)),
        }
    }

    /// Sets a session's tool choice.
    pub fn set_tool_choice(&mut self, session: u64, choice: ToolChoice) -> Result<(), ClientError> {
        let req = Request::SetToolChoice {
            session_id: session,
            choice,
        };
        match self.call(&req)? {
            Reply::ToolChoiceSet { .. } => Ok(()),
            r => Err(unexpected(r)),
        }
    }

    /// Closes a session.
    pub fn close_session(&mut self, session: u64) -> Result<(), ClientError> {
        let req = Request::CloseSession {
            session_id: session,
        };
        match self.call(&req)? {
            Reply::SessionClosed(_) => Ok(()),
            r => Err(unexpected(r)),
        }
    }

    /// Sends a message; read the turn with [`next_event`](Self::next_event).
    pub fn send(&mut self, session: u64, role: Role, content: &str) -> Result<(), ClientError> {
        self.request(&Request::Send {
            session_id: session,
            role,
            content,
        })
    }

    /// Asks the running turn of `session` to stop.
    pub fn cancel(&mut self, session: u64) -> Result<(), ClientError> {
        self.request(&Request::Cancel {
            session_id: session,
        })
    }

    /// The next event of `session` (or a call to a tool this client registered). Errors
    /// about the session come back as [`ClientError::Server`]; events of other sessions are
    /// skipped.
    pub fn next_event(&mut self, session: u64) -> Result<Event, ClientError> {
        loop {
            match self.recv()? {
                Reply::Event { session_id, event } if session_id == session => return Ok(event),
                Reply::Event { .. } => {}
                Reply::CallClientTool(c) => return Ok(Event::ClientCall(c)),
                Reply::Error {
                    code,
                    session_id,
                    message,
                } => {
                    return Err(ClientError::Server {
                        code,
                        session_id,
                        message,
                    })
                }
                r => return Err(unexpected(r)),
            }
        }
    }

    /// Sends a message and passes every event to `on_event` until the turn's `Done`.
    /// Calls to tools this client registered are answered by `on_call`.
    pub fn chat_with(
        &mut self,
        session: u64,
        role: Role,
        content: &str,
        mut on_event: impl FnMut(&Event),
        mut on_call: impl FnMut(&ClientCall) -> Result<String, String>,
    ) -> Result<DoneStats, ClientError> {
        self.send(session, role, content)?;
        loop {
            let ev = self.next_event(session)?;
            on_event(&ev);
            match ev {
                Event::Done(stats) => return Ok(stats),
                Event::ClientCall(c) => {
                    let (ok, text) = match on_call(&c) {
                        Ok(t) => (true, t),
                        Err(t) => (false, t),
                    };
                    self.answer_call(c.call_id, ok, &text)?;
                }
                _ => {}
            }
        }
    }

    /// [`chat_with`](Self::chat_with) for a client that registered no tools.
    pub fn chat(
        &mut self,
        session: u64,
        role: Role,
        content: &str,
        on_event: impl FnMut(&Event),
    ) -> Result<DoneStats, ClientError> {
        self.chat_with(session, role, content, on_event, |c| {
            Err(format!("this client runs no tool named {}", c.name))
        })
    }

    /// Runs a tool directly; returns its output.
    pub fn invoke_tool(&mut self, name: &str, args_json: &str) -> Result<String, ClientError> {
        match self.call(&Request::InvokeTool { name, args_json })? {
            Reply::ToolOutput { content, .. } => Ok(content),
            r => Err(unexpected(r)),
        }
    }

    /// Lists the daemon's tools.
    pub fn list_tools(&mut self) -> Result<Vec<ToolDesc>, ClientError> {
        match self.call(&Request::ListTools)? {
            Reply::Tools(list) => Ok(list),
            r => Err(unexpected(r)),
        }
    }

    /// Offers a tool this client runs.
    pub fn register_tool(&mut self, t: &ToolDesc) -> Result<(), ClientError> {
        let req = Request::RegisterTool {
            name: &t.name,
            description: &t.description,
            schema_json: &t.schema_json,
        };
        match self.call(&req)? {
            Reply::Registered(_) => Ok(()),
            r => Err(unexpected(r)),
        }
    }

    /// Answers a [`ClientCall`].
    pub fn answer_call(
        &mut self,
        call_id: u32,
        ok: bool,
        content: &str,
    ) -> Result<(), ClientError> {
        self.request(&Request::ToolResult {
            call_id,
            ok,
            content,
        })
    }

    /// The daemon's counters.
    pub fn stats(&mut self) -> Result<ServerStats, ClientError> {
        match self.call(&Request::Stats)? {
            Reply::ServerStats(s) => Ok(s),
            r => Err(unexpected(r)),
        }
    }
}

fn unexpected(r: Reply) -> ClientError {
    ClientError::Unexpected(format!("{r:?}"))
}

fn read_full(s: &mut UnixStream, buf: &mut [u8]) -> Result<(), ClientError> {
    let mut at = 0;
    while at < buf.len() {
        match s.read(&mut buf[at..]) {
            Ok(0) => return Err(ClientError::Closed),
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

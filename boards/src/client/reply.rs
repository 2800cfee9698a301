//! Owned forms of the daemon's responses, as the [`Client`](super::Client) hands them out.

use glimmer_core::proto::{DoneStats, ErrorCode, EventKind, Response, ServerStats, ToolChoice};

use crate::daemon::ToolDesc;

/// The model called a tool this client registered; answer with
/// [`Client::answer_call`](super::Client::answer_call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCall {
    /// Id to echo back.
    pub call_id: u32,
    /// Tool name.
    pub name: String,
    /// Arguments, checked against the tool's schema.
    pub args_json: String,
}

/// One event of a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Generated text.
    Token(String),
    /// The model called a tool.
    ToolCall {
        /// Id of the call.
        call_id: u32,
        /// Tool name.
        name: String,
        /// Arguments (JSON object).
        args_json: String,
    },
    /// A tool's result, fed back to the model.
    ToolResult {
        /// The call it answers.
        call_id: u32,
        /// Whether the tool succeeded.
        ok: bool,
        /// Output or error JSON.
        content: String,
    },
    /// The turn ended.
    Done(DoneStats),
    /// Not a wire event: the daemon asks this client to run a tool it registered.
    ClientCall(ClientCall),
}

/// Any response, owned.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Reply {
    /// Answer to `Hello`.
    HelloOk {
        /// Daemon name and version.
        server: String,
        /// Protocol version.
        version: u16,
        /// Model name.
        model: String,
        /// Board profile.
        board: String,
    },
    /// A session was opened.
    SessionOpened(u64),
    /// A session was closed.
    SessionClosed(u64),
    /// An event of session `session_id`.
    Event {
        /// The session.
        session_id: u64,
        /// The event.
        event: Event,
    },
    /// Answer to `InvokeTool`.
    ToolOutput {
        /// Whether the tool succeeded.
        ok: bool,
        /// Its output.
        content: String,
    },
    /// Answer to `ListTools`.
    Tools(Vec<ToolDesc>),
    /// Answer to `RegisterTool`.
    Registered(String),
    /// A call to a tool this client registered.
    CallClientTool(ClientCall),
    /// Answer to `Stats`.
    ServerStats(ServerStats),
    /// A request failed.
    Error {
        /// Stable code.
        code: ErrorCode,
        /// The session concerned.
        session_id: Option<u64>,
        /// Detail.
        message: String,
    },
    /// Answer to `SetToolChoice`.
    ToolChoiceSet {
        /// The session.
        session_id: u64,
        /// The choice in force.
        choice: ToolChoice,
    },
}

impl From<Response<'_>> for Reply {
    fn from(r: Response<'_>) -> Self {
        match r {
            Response::HelloOk {
                server,
                version,
                model,
                board,
            } => Reply::HelloOk {
                server: server.into(),
                version,
                model: model.into(),
                board: board.into(),
            },
            Response::SessionOpened { session_id } => Reply::SessionOpened(session_id),
            Response::SessionClosed { session_id } => Reply::SessionClosed(session_id),
            Response::Event { session_id, kind } => Reply::Event {
                session_id,
                event: match kind {
                    EventKind::Token { text } => Event::Token(text.into()),
                    EventKind::ToolCall {
                        call_id,
                        name,
                        args_json,
                    } => Event::ToolCall {
                        call_id,
                        name: name.into(),
                        args_json: args_json.into(),
                    },
                    EventKind::ToolResult {
                        call_id,
                        ok,
                        content,
                    } => Event::ToolResult {
                        call_id,
                        ok,
                        content: content.into(),
                    },
                    EventKind::Done { stats } => Event::Done(stats),
                },
            },
            Response::ToolOutput { ok, content } => Reply::ToolOutput {
                ok,
                content: content.into(),
            },
            Response::Tools { list } => Reply::Tools(
                list.iter()
                    .map(|t| ToolDesc {
                        name: t.name.into(),
                        description: t.description.into(),
                        schema_json: t.schema_json.into(),
                    })
                    .collect(),
            ),
            Response::Registered { name } => Reply::Registered(name.into()),
            Response::CallClientTool {
                call_id,
                name,
                args_json,
            } => Reply::CallClientTool(ClientCall {
                call_id,
                name: name.into(),
                args_json: args_json.into(),
            }),
            Response::ServerStats(s) => Reply::ServerStats(s),
            Response::Error {
                code,
                session_id,
                message,
            } => Reply::Error {
                code,
                session_id,
                message: message.into(),
            },
            Response::ToolChoiceSet { session_id, choice } => {
                Reply::ToolChoiceSet { session_id, choice }
            }
        }
    }
}

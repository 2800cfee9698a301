//! The messages: [`Request`] (client → daemon) and [`Response`] (daemon → client).
//!
//! Strings borrow from the frame they were decoded from (`&'a str`); lists are
//! fixed-capacity `heapless::Vec`s. The variant order is the wire discriminant: never
//! reorder, only append (and document the number in `docs/PROTOCOL.md`).

use heapless::Vec;
use serde::{Deserialize, Serialize};

use super::ErrorCode;

/// Most tool names an [`Request::OpenSession`] allow-list or a [`Response::Tools`] list holds.
pub const MAX_TOOLS: usize = 32;

/// How a session samples. Field order is the wire order.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingConfig {
    /// Softmax temperature; `<= 0` means greedy.
    pub temperature: f32,
    /// Keep only the `top_k` most likely tokens (0: all).
    pub top_k: u32,
    /// Nucleus mass to keep (1: all).
    pub top_p: f32,
    /// RNG seed.
    pub seed: u64,
    /// Most tokens one [`Request::Send`] may generate (0: up to the context limit).
    pub max_tokens: u32,
}

impl Default for SamplingConfig {
    fn default() -> Self {
        SamplingConfig {
            temperature: 0.0,
            top_k: 40,
            top_p: 0.95,
            seed: 0,
            max_tokens: 0,
        }
    }
}

/// Who a [`Request::Send`] message is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    /// 0: the user.
    User,
    /// 1: a system instruction.
    System,
    /// 2: tool output the client supplies itself.
    Tool,
}

/// Whether the model must, may or may not call tools; set with [`Request::SetToolChoice`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ToolChoice {
    /// 0: the model decides (the default).
    #[default]
    Auto,
    /// 1: each `Send` turn starts with the dialect's call opener, so the model's first
    /// output is a tool call; when the session allows exactly one tool, the opener names it
    /// too, so the model only writes the arguments.
    Required,
    /// 2: no tool calls: call syntax the model writes stays plain text.
    None,
}

/// Why generation stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StopReason {
    /// 0: the model ended its turn.
    EndOfTurn,
    /// 1: `max_tokens` was reached.
    MaxTokens,
    /// 2: the client sent [`Request::Cancel`].
    Cancelled,
    /// 3: the context window filled up.
    ContextFull,
    /// 4: too many tool rounds in one turn.
    ToolLimit,
    /// 5: an error ended the turn (an [`Response::Error`] precedes `Done`).
    Error,
}

/// Counters of one finished turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DoneStats {
    /// Prompt tokens prefilled in this turn (tool results included).
    pub tokens_in: u32,
    /// Tokens generated in this turn.
    pub tokens_out: u32,
    /// Milliseconds spent in prefill.
    pub prefill_ms: u32,
    /// Milliseconds spent decoding.
    pub decode_ms: u32,
    /// Tool calls made in this turn.
    pub tool_calls: u32,
    /// Why the turn ended.
    pub stop_reason: StopReason,
}

/// One item of a [`Response::Event`] stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind<'a> {
    /// 0: generated text (one or more tokens, valid UTF-8).
    Token {
        /// The text.
        text: &'a str,
    },
    /// 1: the model called a tool.
    ToolCall {
        /// Id of this call within the session.
        call_id: u32,
        /// Tool name.
        name: &'a str,
        /// Arguments as a JSON object.
        args_json: &'a str,
    },
    /// 2: a tool's result, fed back to the model.
    ToolResult {
        /// The call it answers.
        call_id: u32,
        /// Whether the tool succeeded.
        ok: bool,
        /// Its output (capped in length) or error text.
        content: &'a str,
    },
    /// 3: the turn ended; no more events for this `Send`.
    Done {
        /// Counters of the turn.
        stats: DoneStats,
    },
}

/// A tool as listed by [`Response::Tools`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo<'a> {
    /// Tool name.
    pub name: &'a str,
    /// What it does, for the model.
    pub description: &'a str,
    /// JSON schema of its parameters (an object schema).
    pub schema_json: &'a str,
}

/// Daemon-wide counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ServerStats {
    /// Sessions open now.
    pub sessions: u32,
    /// Session slots in total.
    pub max_sessions: u32,
    /// Milliseconds since the daemon started.
    pub uptime_ms: u64,
    /// Tokens generated since start.
    pub tokens_total: u64,
    /// Prompt tokens prefilled since start.
    pub prefill_total: u64,
    /// Tool calls since start.
    pub tool_calls_total: u64,
    /// Client connections accepted since start.
    pub connections_total: u64,
}

/// A client → daemon message. The comment number is the wire discriminant.
// The list variants are fixed-capacity inline arrays (no allocator to box them into), so
// the enum is as large as its largest list; messages are short-lived, one at a time.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Request<'a> {
    /// 0: first message on a connection.
    Hello {
        /// Client name and version, free text.
        client: &'a str,
        /// Protocol version the client speaks.
        version: u16,
    },
    /// 1: open a chat session; answered by [`Response::SessionOpened`].
    OpenSession {
        /// How to sample.
        sampling: SamplingConfig,
        /// System prompt; `None` uses the daemon's default.
        #[serde(borrow)]
        system: Option<&'a str>,
        /// Tools the model may call; `None` allows all the daemon offers.
        #[serde(borrow)]
        tools: Option<Vec<&'a str, MAX_TOOLS>>,
        /// Constrain tool-call arguments to the schema while decoding.
        constrained_tool_args: bool,
    },
    /// 2: close a session; answered by [`Response::SessionClosed`].
    CloseSession {
        /// The session.
        session_id: u64,
    },
    /// 3: append a message and generate; answered by a stream of [`Response::Event`].
    Send {
        /// The session.
        session_id: u64,
        /// Who speaks.
        role: Role,
        /// The message text.
        content: &'a str,
    },
    /// 4: run a tool directly; answered by [`Response::ToolOutput`].
    InvokeTool {
        /// Tool name.
        name: &'a str,
        /// Arguments as a JSON object.
        args_json: &'a str,
    },
    /// 5: list tools; answered by [`Response::Tools`].
    ListTools,
    /// 6: offer a tool this client runs; answered by [`Response::Registered`].
    RegisterTool {
        /// Tool name.
        name: &'a str,
        /// What it does, for the model.
        description: &'a str,
        /// JSON schema of its parameters.
        schema_json: &'a str,
    },
    /// 7: the result of a [`Response::CallClientTool`].
    ToolResult {
        /// The call it answers.
        call_id: u32,
        /// Whether the tool succeeded.
        ok: bool,
        /// Output or error text.
        content: &'a str,
    },
    /// 8: daemon counters; answered by [`Response::ServerStats`].
    Stats,
    /// 9: stop the generation running in a session (it ends with `Done{Cancelled}`).
    Cancel {
        /// The session.
        session_id: u64,
    },
    /// 10: set a session's [`ToolChoice`] for its next turns; answered by
    /// [`Response::ToolChoiceSet`].
    SetToolChoice {
        /// The session.
        session_id: u64,
        /// The choice.
        choice: ToolChoice,
    },
}

/// A daemon → client message. The comment number is the wire discriminant.
// The list variants are fixed-capacity inline arrays (no allocator to box them into), so
// the enum is as large as its largest list; messages are short-lived, one at a time.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Response<'a> {
    /// 0: answer to [`Request::Hello`].
    HelloOk {
        /// Daemon name and version.
        server: &'a str,
        /// Protocol version the daemon speaks.
        version: u16,
        /// Loaded model name.
        model: &'a str,
        /// Board profile name.
        board: &'a str,
    },
    /// 1: a session was opened.
    SessionOpened {
        /// Its id.
        session_id: u64,
    },
    /// 2: a session was closed.
    SessionClosed {
        /// Its id.
        session_id: u64,
    },
    /// 3: one streamed event of a [`Request::Send`].
    Event {
        /// The session.
        session_id: u64,
        /// What happened.
        #[serde(borrow)]
        kind: EventKind<'a>,
    },
    /// 4: answer to [`Request::InvokeTool`].
    ToolOutput {
        /// Whether the tool succeeded.
        ok: bool,
        /// Output or error text.
        content: &'a str,
    },
    /// 5: answer to [`Request::ListTools`].
    Tools {
        /// The tools.
        #[serde(borrow)]
        list: Vec<ToolInfo<'a>, MAX_TOOLS>,
    },
    /// 6: answer to [`Request::RegisterTool`].
    Registered {
        /// The registered name.
        name: &'a str,
    },
    /// 7: the model called a tool this client registered; answer with [`Request::ToolResult`].
    CallClientTool {
        /// Id to echo back.
        call_id: u32,
        /// Tool name.
        name: &'a str,
        /// Arguments as a JSON object (already checked against the schema).
        args_json: &'a str,
    },
    /// 8: answer to [`Request::Stats`].
    ServerStats(ServerStats),
    /// 9: a request failed.
    Error {
        /// Stable code.
        code: ErrorCode,
        /// The session concerned, if any.
        session_id: Option<u64>,
        /// Human-readable detail.
        message: &'a str,
    },
    /// 10: answer to [`Request::SetToolChoice`].
    ToolChoiceSet {
        /// The session.
        session_id: u64,
        /// The choice now in force.
        choice: ToolChoice,
    },
}

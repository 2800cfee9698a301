//! Tools: the [`ToolHost`] trait the daemon's own tools implement, the registry that adds
//! client-registered tools, and argument checking against a tool's JSON schema.

use std::sync::{Arc, RwLock};

use glimmer_core::chat::json;
use glimmer_core::chat::schema::{Param, ToolSchema, Value};
use glimmer_core::chat::toolcall::CallArgs;
use glimmer_core::chat::Out;
use glimmer_core::proto::ErrorCode;

use super::outbox::Outbox;

/// Most parameters a tool schema may declare.
pub const MAX_PARAMS: usize = 16;
/// Most enum options, over all parameters of one tool.
pub const MAX_OPTIONS: usize = 64;

/// A tool as offered to the model and listed to clients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolDesc {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of its parameters (an object schema of string, integer, number, boolean
    /// and enum properties).
    pub schema_json: String,
}

/// Why a tool call failed: a stable wire code and a message for the model and the client.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolFailure {
    /// The code (for example [`ErrorCode::ActuatorLimit`] or [`ErrorCode::ToolFailed`]).
    pub code: ErrorCode,
    /// What went wrong.
    pub message: String,
}

impl ToolFailure {
    /// A failure with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolFailure {
            code,
            message: message.into(),
        }
    }

    /// The text fed back to the model (and shown in the `ToolResult` event):
    /// `{"error":"<code name>","code":<n>,"message":"…"}`.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"error\":\"{}\",\"code\":{},\"message\":{}}}",
            self.code.name(),
            self.code.as_u16(),
            json_string(&self.message)
        )
    }
}

/// The daemon's own tools (board drivers, for example).
///
/// Contract: [`tools`](Self::tools) is read once, when the daemon starts. [`invoke`](Self::invoke)
/// runs on a thread of its own, gets arguments already checked against the tool's schema
/// (a compact JSON object in schema order), and may block; the daemon stops waiting after its
/// tool timeout and reports [`ErrorCode::ToolTimeout`], leaving the call to finish (or not)
/// on its thread. Output is cut to the daemon's length limit before the model sees it.
pub trait ToolHost: Send + Sync {
    /// The tools offered.
    fn tools(&self) -> Vec<ToolDesc>;
    /// Runs tool `name` with `args_json`; returns its output text.
    fn invoke(&self, name: &str, args_json: &str) -> Result<String, ToolFailure>;
}

/// A [`ToolHost`] with no tools (only client-registered tools are offered).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTools;

impl ToolHost for NoTools {
    fn tools(&self) -> Vec<ToolDesc> {
        Vec::new()
    }

    fn invoke(&self, name: &str, _args_json: &str) -> Result<String, ToolFailure> {
        Err(ToolFailure::new(
            ErrorCode::UnknownTool,
            format!("no tool named {name}"),
        ))
    }
}

/// Who runs a tool.
#[derive(Clone)]
pub(crate) enum Target {
    /// The daemon's [`ToolHost`].
    Host,
    /// The client on connection `conn`.
    Client {
        /// Its connection.
        conn: u64,
        /// Where to send the call.
        out: Outbox,
    },
}

struct ClientTool {
    desc: ToolDesc,
    conn: u64,
    out: Outbox,
}

/// The host's tools plus those clients registered.
pub(crate) struct Registry {
    pub host: Arc<dyn ToolHost>,
    host_tools: Vec<ToolDesc>,
    client: RwLock<Vec<ClientTool>>,
}

impl Registry {
    /// Reads the host's tools and checks their schemas.
    pub fn new(host: Arc<dyn ToolHost>) -> Result<Self, super::DaemonError> {
        let host_tools = host.tools();
        for t in &host_tools {
            validate_schema(t).map_err(|e| super::DaemonError::ToolSchema(t.name.clone(), e))?;
        }
        Ok(Registry {
            host,
            host_tools,
            client: RwLock::new(Vec::new()),
        })
    }

    /// Every tool, host tools first.
    pub fn list(&self) -> Vec<ToolDesc> {
        let client = self.client.read().unwrap_or_else(|e| e.into_inner());
        let extra = client.iter().map(|c| c.desc.clone());
        self.host_tools.iter().cloned().chain(extra).collect()
    }

    /// The tool called `name` and who runs it.
    pub fn lookup(&self, name: &str) -> Option<(ToolDesc, Target)> {
        if let Some(t) = self.host_tools.iter().find(|t| t.name == name) {
            return Some((t.clone(), Target::Host));
        }
        let client = self.client.read().unwrap_or_else(|e| e.into_inner());
        client.iter().find(|c| c.desc.name == name).map(|c| {
            let target = Target::Client {
                conn: c.conn,
                out: c.out.clone(),
            };
            (c.desc.clone(), target)
        })
    }

    /// Adds a tool run by connection `conn`.
    pub fn register(&self, desc: ToolDesc, conn: u64, out: Outbox) -> Result<(), ToolFailure> {
        validate_schema(&desc).map_err(|e| ToolFailure::new(ErrorCode::BadToolArgs, e))?;
        if desc.name.is_empty() {
            return Err(ToolFailure::new(ErrorCode::BadToolArgs, "empty tool name"));
        }
        let mut client = self.client.write().unwrap_or_else(|e| e.into_inner());
        let taken = self.host_tools.iter().any(|t| t.name == desc.name)
            || client.iter().any(|c| c.desc.name == desc.name);
        if taken {
            return Err(ToolFailure::new(
                ErrorCode::AlreadyRegistered,
                format!("a tool named {} exists", desc.name),
            ));
        }
        if self.host_tools.len() + client.len() >= glimmer_core::proto::MAX_TOOLS {
            return Err(ToolFailure::new(ErrorCode::Busy, "tool table full"));
        }
        client.push(ClientTool { desc, conn, out });
        Ok(())
    }

    /// Drops the tools connection `conn` registered.
    pub fn forget_conn(&self, conn: u64) {
        let mut client = self.client.write().unwrap_or_else(|e| e.into_inner());
        client.retain(|c| c.conn != conn);
    }
}

fn validate_schema(t: &ToolDesc) -> Result<(), String> {
    let mut params = [Param::EMPTY; MAX_PARAMS];
    let mut options = [""; MAX_OPTIONS];
    ToolSchema::from_json(
        &t.name,
        &t.description,
        &t.schema_json,
        &mut params,
        &mut options,
    )
    .map(|_| ())
    .map_err(|e| format!("schema: {e}"))
}

/// Checks a call's arguments against `tool`'s schema; returns them as a compact JSON object
/// in schema order, or why they fail ([`ErrorCode::BadToolArgs`]).
pub(crate) fn check_args(tool: &ToolDesc, args: &CallArgs<'_>) -> Result<String, ToolFailure> {
    let bad = |m: String| ToolFailure::new(ErrorCode::BadToolArgs, m);
    let mut params = [Param::EMPTY; MAX_PARAMS];
    let mut options = [""; MAX_OPTIONS];
    let schema = ToolSchema::from_json(
        &tool.name,
        &tool.description,
        &tool.schema_json,
        &mut params,
        &mut options,
    )
    .map_err(|e| bad(format!("schema: {e}")))?;
    let mut values = [Value::Absent; MAX_PARAMS];
    schema
        .check(args, &mut values)
        .map_err(|e| bad(e.to_string()))?;
    let raw_len = match args {
        CallArgs::Json(s) | CallArgs::Qwen(s) | CallArgs::Atem(s) => s.len(),
    };
    let mut buf = vec![0u8; raw_len.saturating_mul(2).saturating_add(256)];
    let mut out = Out::new(&mut buf);
    schema
        .write_args_json(&values, &mut out)
        .map_err(|e| bad(format!("arguments: {e}")))?;
    Ok(out.as_str().to_string())
}

/// Checks direct `args_json` (from `InvokeTool`) against `tool`'s schema.
pub(crate) fn check_json_args(tool: &ToolDesc, args_json: &str) -> Result<String, ToolFailure> {
    let obj = json::parse_object(args_json).map_err(|e| {
        ToolFailure::new(
            ErrorCode::BadToolArgs,
            format!("arguments are not a JSON object: {e:?}"),
        )
    })?;
    check_args(tool, &CallArgs::Json(obj))
}

/// `s` as a JSON string literal.
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

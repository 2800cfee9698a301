//! Chat templates and tool calls.
//!
//! A conversation is a slice of [`Message`]s; a [`Template`] renders it, with the tool
//! definitions ([`ToolDef`]), into a caller buffer through an [`Out`] writer. As the model
//! generates, a [`toolcall::CallParser`] in the template's [`toolcall::Dialect`] separates
//! plain text from tool calls, and [`schema`] checks and coerces the calls' arguments.
//!
//! # How the pieces fit
//! - [`Message`], [`Role`], [`ToolCall`], [`ToolDef`]: the conversation and the tools.
//! - [`Template`]: ChatML (SmolLM2, Hermes tools), Gemma 3, Glimmer's Harmony-style
//!   framing (ATEM tools) and OpenAI's Harmony; see each module for the exact rendering.
//! - [`toolcall`]: streaming tool-call parsers (Hermes JSON, Qwen XML, ATEM XML).
//! - [`schema`]: typed tool schemas, argument checking and coercion, JSON rendering.
//! - [`json`]: the small JSON scanner the rest uses.
//! - [`constrain`]: constrained decoding of tool calls (masking logits to valid calls).
//! - [`ChatError`]: why rendering failed (a full buffer, bad tool arguments).
//!
//! Templates emit no BOS token: the tokenizer adds it.

pub mod chatml;
pub mod constrain;
pub mod gemma;
pub mod harmony;
pub mod json;
mod out;
pub mod schema;
pub mod toolcall;

pub use out::{ChatError, Out};

/// Who speaks a [`Message`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role<'a> {
    /// Instructions for the model.
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// The result of a tool call.
    Tool {
        /// The call this answers.
        call_id: &'a str,
        /// The tool that ran.
        name: &'a str,
    },
}

/// A tool call made by the assistant, as kept in the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ToolCall<'a> {
    /// Call id (unused by the templates here, kept for the caller).
    pub id: &'a str,
    /// Tool name.
    pub name: &'a str,
    /// Arguments: a JSON object.
    pub arguments: &'a str,
}

/// One turn of a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Message<'a> {
    /// Who speaks.
    pub role: Role<'a>,
    /// The text.
    pub content: &'a str,
    /// Private reasoning before the content (assistant only; templates without a
    /// reasoning channel drop it).
    pub reasoning: Option<&'a str>,
    /// Tool calls after the content (assistant only).
    pub tool_calls: &'a [ToolCall<'a>],
}

impl<'a> Message<'a> {
    /// A message from `role` with `content` and nothing else.
    pub const fn new(role: Role<'a>, content: &'a str) -> Self {
        Message {
            role,
            content,
            reasoning: None,
            tool_calls: &[],
        }
    }

    /// A system message.
    pub const fn system(content: &'a str) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub const fn user(content: &'a str) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message.
    pub const fn assistant(content: &'a str) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// An assistant message that calls tools after `content`.
    pub const fn assistant_calls(content: &'a str, calls: &'a [ToolCall<'a>]) -> Self {
        Message {
            tool_calls: calls,
            ..Self::new(Role::Assistant, content)
        }
    }

    /// The result of call `call_id` to tool `name`.
    pub const fn tool(call_id: &'a str, name: &'a str, content: &'a str) -> Self {
        Self::new(Role::Tool { call_id, name }, content)
    }

    /// Whether this is a tool result.
    pub const fn is_tool(&self) -> bool {
        matches!(self.role, Role::Tool { .. })
    }
}

/// A tool offered to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ToolDef<'a> {
    /// Tool name.
    pub name: &'a str,
    /// What it does.
    pub description: &'a str,
    /// JSON schema of its parameters (an object schema), as JSON text.
    pub parameters: &'a str,
}

/// The chat formats Glimmer renders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Template<'s> {
    /// ChatML as SmolLM2 uses it, with Hermes-style tools.
    ChatMl(chatml::ChatMl<'s>),
    /// Gemma 3.
    Gemma,
    /// Glimmer's Harmony-style framing with ATEM tool calls.
    Glimmer,
    /// OpenAI's Harmony (gpt-oss).
    OpenAiHarmony(harmony::OpenAiHarmony<'s>),
}

impl Template<'_> {
    /// Renders `messages` (and `tools`, if any) into `out`; with `add_generation_prompt`
    /// the text ends with the header that makes the model answer as the assistant.
    pub fn render(
        &self,
        messages: &[Message<'_>],
        tools: &[ToolDef<'_>],
        add_generation_prompt: bool,
        out: &mut Out<'_>,
    ) -> Result<(), ChatError> {
        match self {
            Template::ChatMl(t) => t.render(messages, tools, add_generation_prompt, out),
            Template::Gemma => gemma::render(messages, tools, add_generation_prompt, out),
            Template::Glimmer => {
                harmony::render_glimmer(messages, tools, add_generation_prompt, out)
            }
            Template::OpenAiHarmony(t) => t.render(messages, tools, add_generation_prompt, out),
        }
    }

    /// The tool-call dialect the model answers in, if this crate parses it.
    pub fn tool_dialect(&self) -> Option<toolcall::Dialect> {
        match self {
            Template::ChatMl(_) | Template::Gemma => Some(toolcall::Dialect::Hermes),
            Template::Glimmer => Some(toolcall::Dialect::Atem),
            Template::OpenAiHarmony(_) => None,
        }
    }
}

/// Writes `{"name": NAME, "arguments": ARGS}` (the Hermes call object) with `ARGS` compacted.
pub(crate) fn write_hermes_call(call: &ToolCall<'_>, out: &mut Out<'_>) -> Result<(), ChatError> {
    let args = json::parse_object(call.arguments).map_err(|_| ChatError::BadToolArgs)?;
    out.push("{\"name\": ")?;
    json::write_string(call.name, out)?;
    out.push(", \"arguments\": ")?;
    json::write_compact(args, out)?;
    out.push("}")
}

/// Writes the Hermes tools section (after a system prompt): the schemas inside `<tools>` and
/// the instruction to answer with `<tool_call>` blocks.
pub(crate) fn write_hermes_tools(
    tools: &[ToolDef<'_>],
    out: &mut Out<'_>,
) -> Result<(), ChatError> {
    out.push(
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
         You are provided with function signatures within <tools></tools> XML tags:\n<tools>",
    )?;
    for t in tools {
        out.push("\n{\"type\": \"function\", \"function\": {\"name\": ")?;
        json::write_string(t.name, out)?;
        out.push(", \"description\": ")?;
        json::write_string(t.description, out)?;
        out.push(", \"parameters\": ")?;
        let params = json::parse_object(t.parameters).map_err(|_| ChatError::BadToolArgs)?;
        json::write_compact(params, out)?;
        out.push("}}")?;
    }
    out.push(
        "\n</tools>\n\nFor each function call, return a json object with function name and \
         arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n\
         {\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>",
    )
}

#[cfg(test)]
mod tests;

//! ChatML, as SmolLM2-Instruct's chat template renders it, with Hermes-style tools.
//!
//! ```text
//! <|im_start|>system\n{system}<|im_end|>\n
//! <|im_start|>user\n{content}<|im_end|>\n
//! <|im_start|>assistant\n{content}<|im_end|>\n
//! <|im_start|>assistant\n            (generation prompt)
//! ```
//! When the first message is not a system message, SmolLM2's template inserts its default
//! system prompt ([`SMOLLM2_DEFAULT_SYSTEM`]); [`ChatMl::default_system`] controls that.
//!
//! SmolLM2's template has no tool support, so tools follow the Hermes convention (as Qwen2.5
//! renders it):
//! - the system message gets `\n\n` + a `# Tools` section listing each tool as
//!   `{"type": "function", "function": {...}}` inside `<tools>…</tools>` and asking for
//!   `<tool_call>{"name": …, "arguments": {…}}</tool_call>` answers;
//! - an assistant message's tool calls follow its content, each as
//!   `\n<tool_call>\n{"name": "N", "arguments": {...}}\n</tool_call>` (no leading `\n` when
//!   the content is empty and it is the first call);
//! - consecutive tool results form one user turn:
//!   `<|im_start|>user\n<tool_response>\n{result}\n</tool_response>…<|im_end|>\n`, the
//!   responses separated by `\n`.

use super::{write_hermes_call, write_hermes_tools, ChatError, Message, Out, Role, ToolDef};

/// SmolLM2's default system prompt.
pub const SMOLLM2_DEFAULT_SYSTEM: &str =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

/// ChatML renderer settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChatMl<'s> {
    /// System prompt used when the conversation does not start with one (`None`: none).
    pub default_system: Option<&'s str>,
}

impl ChatMl<'static> {
    /// SmolLM2-Instruct's template.
    pub const SMOLLM2: ChatMl<'static> = ChatMl {
        default_system: Some(SMOLLM2_DEFAULT_SYSTEM),
    };
}

impl ChatMl<'_> {
    /// Renders `messages`; see the module docs.
    pub fn render(
        &self,
        messages: &[Message<'_>],
        tools: &[ToolDef<'_>],
        add_generation_prompt: bool,
        out: &mut Out<'_>,
    ) -> Result<(), ChatError> {
        let (system, rest) = match messages.split_first() {
            Some((m, rest)) if m.role == Role::System => (Some(m.content), rest),
            _ => (self.default_system, messages),
        };
        if system.is_some() || !tools.is_empty() {
            out.push("<|im_start|>system\n")?;
            let sys = system.unwrap_or("");
            out.push(sys)?;
            if !tools.is_empty() {
                if !sys.is_empty() {
                    out.push("\n\n")?;
                }
                write_hermes_tools(tools, out)?;
            }
            out.push("<|im_end|>\n")?;
        }
        for (i, m) in rest.iter().enumerate() {
            match m.role {
                Role::System => turn("system", m.content, out)?,
                Role::User => turn("user", m.content, out)?,
                Role::Assistant => {
                    out.push_all(&["<|im_start|>assistant\n", m.content])?;
                    for (k, call) in m.tool_calls.iter().enumerate() {
                        if k > 0 || !m.content.is_empty() {
                            out.push("\n")?;
                        }
                        out.push("<tool_call>\n")?;
                        write_hermes_call(call, out)?;
                        out.push("\n</tool_call>")?;
                    }
                    out.push("<|im_end|>\n")?;
                }
                Role::Tool { .. } => {
                    let prev_tool = i > 0 && rest[i - 1].is_tool();
                    let next_tool = rest.get(i + 1).is_some_and(Message::is_tool);
                    out.push(if prev_tool {
                        "\n"
                    } else {
                        "<|im_start|>user\n"
                    })?;
                    out.push_all(&["<tool_response>\n", m.content, "\n</tool_response>"])?;
                    if !next_tool {
                        out.push("<|im_end|>\n")?;
                    }
                }
            }
        }
        if add_generation_prompt {
            out.push("<|im_start|>assistant\n")?;
        }
        Ok(())
    }
}

fn turn(role: &str, content: &str, out: &mut Out<'_>) -> Result<(), ChatError> {
    out.push_all(&["<|im_start|>", role, "\n", content, "<|im_end|>\n"])
}

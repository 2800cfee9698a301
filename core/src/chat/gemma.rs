//! Gemma 3's chat format.
//!
//! ```text
//! <start_of_turn>user\n{system}\n\n{first user content}<end_of_turn>\n
//! <start_of_turn>model\n{content}<end_of_turn>\n
//! <start_of_turn>model\n            (generation prompt)
//! ```
//! As Gemma 3's template does: a leading system message is folded into the first turn
//! (its text + `\n\n` before that turn's content), the assistant role is `model`, and each
//! turn's content is trimmed of surrounding whitespace (the system text is not). The BOS
//! token the template starts with is left to the tokenizer.
//!
//! Gemma 3 has no tool format; Glimmer uses the Hermes convention (see [`super::chatml`]):
//! - the tools section is folded into the first turn after the system text
//!   (`{system}\n\n# Tools…</tool_call>\n\n`);
//! - assistant tool calls follow the content as `<tool_call>` blocks;
//! - consecutive tool results form one user turn of `<tool_response>` blocks.
//!
//! Later system messages become user turns (Gemma has no system role). Turns are not
//! checked for strict user/model alternation, which the Jinja template enforces.

use super::{write_hermes_call, write_hermes_tools, ChatError, Message, Out, Role, ToolDef};

/// Renders `messages`; see the module docs.
pub fn render(
    messages: &[Message<'_>],
    tools: &[ToolDef<'_>],
    add_generation_prompt: bool,
    out: &mut Out<'_>,
) -> Result<(), ChatError> {
    let (system, rest) = match messages.split_first() {
        Some((m, rest)) if m.role == Role::System => (Some(m.content), rest),
        _ => (None, messages),
    };
    for (i, m) in rest.iter().enumerate() {
        let prev_tool = i > 0 && rest[i - 1].is_tool();
        if !(m.is_tool() && prev_tool) {
            let role = if m.role == Role::Assistant {
                "model"
            } else {
                "user"
            };
            out.push_all(&["<start_of_turn>", role, "\n"])?;
        }
        if i == 0 {
            if let Some(sys) = system {
                out.push_all(&[sys, "\n\n"])?;
            }
            if !tools.is_empty() {
                write_hermes_tools(tools, out)?;
                out.push("\n\n")?;
            }
        }
        match m.role {
            Role::Tool { .. } => {
                if prev_tool {
                    out.push("\n")?;
                }
                out.push_all(&["<tool_response>\n", m.content.trim(), "\n</tool_response>"])?;
                if rest.get(i + 1).is_some_and(Message::is_tool) {
                    continue;
                }
            }
            _ => {
                let content = m.content.trim();
                out.push(content)?;
                for (k, call) in m.tool_calls.iter().enumerate() {
                    if k > 0 || !content.is_empty() {
                        out.push("\n")?;
                    }
                    out.push("<tool_call>\n")?;
                    write_hermes_call(call, out)?;
                    out.push("\n</tool_call>")?;
                }
            }
        }
        out.push("<end_of_turn>\n")?;
    }
    if add_generation_prompt {
        out.push("<start_of_turn>model\n")?;
    }
    Ok(())
}

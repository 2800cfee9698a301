//! Harmony-style formats: Glimmer's own framing and OpenAI's Harmony (gpt-oss).
//!
//! # Glimmer
//! ```text
//! <|start|>system<|message|>{system}<|eot|>
//! <|start|>user<|message|>{content}<|eot|>
//! <|start|>assistant to=self<|message|>{reasoning}<|eom|>        (if any)
//! <|start|>assistant<|message|>{content}<|eot|>                   (<|eom|> if calls follow)
//! <|start|>assistant to=NAME<|message|><atem:function_calls>\n<atem:invoke name="NAME">\n
//! <atem:parameter name="k">V</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eom|>
//! <|start|>tool name=NAME<|message|>{result}<|eot|>
//! <|start|>assistant                                              (generation prompt)
//! ```
//! Each tool call is its own `to=NAME` message. Parameter values are the JSON arguments
//! with strings unescaped and other values as compact JSON. An assistant message with
//! calls and no content or reasoning renders only the calls.
//!
//! Glimmer's public sources do not show how tools are described or how results come back,
//! so this rendering is Glimmer's choice: tools are a `# Tools` section appended to the
//! system message (`\n\n` after a non-empty system text), one JSON object per tool
//! (`{"name": …, "description": …, "parameters": {…}}`) and the ATEM call shape; a result
//! is a `tool` message naming the tool.
//!
//! # OpenAI Harmony
//! ```text
//! <|start|>system<|message|>{identity}\n\nReasoning: {effort}\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>
//! <|start|>developer<|message|># Instructions\n\n{system}\n\n# Tools\n\n## functions\n\nnamespace functions {…} // namespace functions<|end|>
//! <|start|>user<|message|>{content}<|end|>
//! <|start|>assistant<|channel|>analysis<|message|>{reasoning}<|end|>
//! <|start|>assistant<|channel|>final<|message|>{content}<|end|>
//! <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{args}<|call|>
//! <|start|>functions.NAME to=assistant<|channel|>commentary<|message|>{result}<|end|>
//! <|start|>assistant
//! ```
//! With tools the system message adds `\nCalls to these tools must go to the commentary
//! channel: 'functions'.` Each tool is declared as `// {description}\ntype NAME = (_:
//! {parameters JSON}) => any;` — the JSON schema itself rather than gpt-oss's TypeScript
//! rendering of it.

use super::{json, ChatError, Message, Out, Role, ToolCall, ToolDef};

/// Renders `messages` in Glimmer's format; see the module docs.
pub fn render_glimmer(
    messages: &[Message<'_>],
    tools: &[ToolDef<'_>],
    add_generation_prompt: bool,
    out: &mut Out<'_>,
) -> Result<(), ChatError> {
    let (system, rest) = match messages.split_first() {
        Some((m, rest)) if m.role == Role::System => (Some(m.content), rest),
        _ => (None, messages),
    };
    if system.is_some() || !tools.is_empty() {
        let sys = system.unwrap_or("");
        out.push_all(&["<|start|>system<|message|>", sys])?;
        if !tools.is_empty() {
            if !sys.is_empty() {
                out.push("\n\n")?;
            }
            write_glimmer_tools(tools, out)?;
        }
        out.push("<|eot|>")?;
    }
    for m in rest {
        match m.role {
            Role::System => out.push_all(&["<|start|>system<|message|>", m.content, "<|eot|>"])?,
            Role::User => out.push_all(&["<|start|>user<|message|>", m.content, "<|eot|>"])?,
            Role::Tool { name, .. } => out.push_all(&[
                "<|start|>tool name=",
                name,
                "<|message|>",
                m.content,
                "<|eot|>",
            ])?,
            Role::Assistant => {
                if let Some(r) = m.reasoning {
                    out.push_all(&["<|start|>assistant to=self<|message|>", r, "<|eom|>"])?;
                }
                let calls = !m.tool_calls.is_empty();
                if !calls || !m.content.is_empty() {
                    let end = if calls { "<|eom|>" } else { "<|eot|>" };
                    out.push_all(&["<|start|>assistant<|message|>", m.content, end])?;
                }
                for call in m.tool_calls {
                    write_atem_call(call, out)?;
                }
            }
        }
    }
    if add_generation_prompt {
        out.push("<|start|>assistant")?;
    }
    Ok(())
}

fn write_glimmer_tools(tools: &[ToolDef<'_>], out: &mut Out<'_>) -> Result<(), ChatError> {
    out.push("# Tools\n\nYou can call these tools:")?;
    for t in tools {
        out.push("\n{\"name\": ")?;
        json::write_string(t.name, out)?;
        out.push(", \"description\": ")?;
        json::write_string(t.description, out)?;
        out.push(", \"parameters\": ")?;
        let params = json::parse_object(t.parameters).map_err(|_| ChatError::BadToolArgs)?;
        json::write_compact(params, out)?;
        out.push("}")?;
    }
    out.push(
        "\n\nTo call a tool, send a message to=TOOL_NAME whose body is:\n\
         <atem:function_calls>\n<atem:invoke name=\"TOOL_NAME\">\n\
         <atem:parameter name=\"PARAMETER\">VALUE</atem:parameter>\n\
         </atem:invoke>\n</atem:function_calls>",
    )
}

/// Writes one tool call as a Glimmer `to=NAME` message holding an ATEM block.
pub fn write_atem_call(call: &ToolCall<'_>, out: &mut Out<'_>) -> Result<(), ChatError> {
    let args = json::parse_object(call.arguments).map_err(|_| ChatError::BadToolArgs)?;
    out.push_all(&["<|start|>assistant to=", call.name, "<|message|>"])?;
    out.push_all(&[
        "<atem:function_calls>\n<atem:invoke name=\"",
        call.name,
        "\">\n",
    ])?;
    for (key, value) in json::members(args) {
        out.push("<atem:parameter name=\"")?;
        json::write_unescaped(key, out)?;
        out.push("\">")?;
        if json::kind(value) == json::Kind::String {
            json::write_unescaped(&value[1..value.len() - 1], out)?;
        } else {
            json::write_compact(value, out)?;
        }
        out.push("</atem:parameter>\n")?;
    }
    out.push("</atem:invoke>\n</atem:function_calls><|eom|>")
}

/// OpenAI Harmony renderer settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpenAiHarmony<'s> {
    /// First line(s) of the system message (model identity, dates).
    pub identity: &'s str,
    /// Reasoning effort: `low`, `medium` or `high`.
    pub reasoning_effort: &'s str,
}

impl Default for OpenAiHarmony<'static> {
    fn default() -> Self {
        OpenAiHarmony {
            identity: "You are ChatGPT, a large language model trained by OpenAI.",
            reasoning_effort: "medium",
        }
    }
}

impl OpenAiHarmony<'_> {
    /// Renders `messages`; see the module docs.
    pub fn render(
        &self,
        messages: &[Message<'_>],
        tools: &[ToolDef<'_>],
        add_generation_prompt: bool,
        out: &mut Out<'_>,
    ) -> Result<(), ChatError> {
        out.push_all(&[
            "<|start|>system<|message|>",
            self.identity,
            "\n\nReasoning: ",
        ])?;
        out.push_all(&[
            self.reasoning_effort,
            "\n\n# Valid channels: analysis, commentary, final. \
             Channel must be included for every message.",
        ])?;
        if !tools.is_empty() {
            out.push("\nCalls to these tools must go to the commentary channel: 'functions'.")?;
        }
        out.push("<|end|>")?;
        let (system, rest) = match messages.split_first() {
            Some((m, rest)) if m.role == Role::System => (Some(m.content), rest),
            _ => (None, messages),
        };
        if system.is_some() || !tools.is_empty() {
            out.push("<|start|>developer<|message|>")?;
            if let Some(sys) = system {
                out.push_all(&["# Instructions\n\n", sys])?;
                if !tools.is_empty() {
                    out.push("\n\n")?;
                }
            }
            if !tools.is_empty() {
                out.push("# Tools\n\n## functions\n\nnamespace functions {\n\n")?;
                for t in tools {
                    let params =
                        json::parse_object(t.parameters).map_err(|_| ChatError::BadToolArgs)?;
                    out.push_all(&["// ", t.description, "\ntype ", t.name, " = (_: "])?;
                    json::write_compact(params, out)?;
                    out.push(") => any;\n\n")?;
                }
                out.push("} // namespace functions")?;
            }
            out.push("<|end|>")?;
        }
        for m in rest {
            match m.role {
                Role::System => {
                    out.push_all(&["<|start|>developer<|message|>", m.content, "<|end|>"])?
                }
                Role::User => out.push_all(&["<|start|>user<|message|>", m.content, "<|end|>"])?,
                Role::Tool { name, .. } => out.push_all(&[
                    "<|start|>functions.",
                    name,
                    " to=assistant<|channel|>commentary<|message|>",
                    m.content,
                    "<|end|>",
                ])?,
                Role::Assistant => {
                    if let Some(r) = m.reasoning {
                        out.push_all(&["<|start|>assistant<|channel|>analysis<|message|>", r])?;
                        out.push("<|end|>")?;
                    }
                    if m.tool_calls.is_empty() || !m.content.is_empty() {
                        out.push_all(&["<|start|>assistant<|channel|>final<|message|>"])?;
                        out.push_all(&[m.content, "<|end|>"])?;
                    }
                    for call in m.tool_calls {
                        let args = json::parse_object(call.arguments)
                            .map_err(|_| ChatError::BadToolArgs)?;
                        out.push("<|start|>assistant<|channel|>commentary to=functions.")?;
                        out.push_all(&[call.name, " <|constrain|>json<|message|>"])?;
                        json::write_compact(args, out)?;
                        out.push("<|call|>")?;
                    }
                }
            }
        }
        if add_generation_prompt {
            out.push("<|start|>assistant")?;
        }
        Ok(())
    }
}

//! Turning messages into the text fed to a session: the first prompt (system, tools, first
//! message) and the continuations appended to a live KV cache, each exactly the text the
//! model's chat template renders after what the cache already holds.

use glimmer_core::chat::chatml::ChatMl;
use glimmer_core::chat::toolcall::Dialect;
use glimmer_core::chat::{ChatError, Message, Out, Role, Template, ToolCall, ToolDef};
use glimmer_core::model::Arch;

use super::tools::ToolDesc;

/// Stands in for the assistant's generated text when rendering what follows it.
const SENTINEL: &str = "\u{E000}glimmer-sentinel\u{E000}";

/// Why a prompt could not be rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// The template refused the messages.
    #[error("chat template: {0}")]
    Chat(ChatError),
    /// The template renders history inconsistently, so text cannot be appended.
    #[error("the template does not render a stable prefix")]
    Unstable,
    /// The template has no tool-call opener to force a call with.
    #[error("this model's tool-call dialect cannot be forced")]
    NoOpener,
}

/// The model's chat template and tool-call dialect.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prompter {
    template: Template<'static>,
}

impl Prompter {
    /// The template for a model architecture.
    pub fn for_arch(arch: Arch) -> Self {
        let template = match arch {
            Arch::Llama => Template::ChatMl(ChatMl::SMOLLM2),
            Arch::Gemma3 => Template::Gemma,
            Arch::Glimmer => Template::Glimmer,
        };
        Prompter { template }
    }

    /// The tool-call dialect the model answers in.
    pub fn dialect(&self) -> Option<Dialect> {
        self.template.tool_dialect()
    }

    /// Text that opens a tool call (what `tool_choice = required` starts a turn with):
    /// the dialect's opening tag, and with `only` (the session's one tool) the call's name
    /// too, up to where the arguments begin.
    pub fn call_opener(&self, only: Option<&str>) -> Result<String, PromptError> {
        match (self.dialect(), only) {
            (Some(Dialect::Hermes), Some(name)) => Ok(format!(
                "<tool_call>\n{{\"name\": {}, \"arguments\": ",
                super::tools::json_string(name)
            )),
            (Some(Dialect::Hermes) | Some(Dialect::QwenXml), _) => Ok("<tool_call>\n".into()),
            _ => Err(PromptError::NoOpener),
        }
    }

    /// The first prompt of a session: system prompt, tool schemas, `msg`, generation prompt.
    pub fn first(
        &self,
        system: Option<&str>,
        tools: &[ToolDesc],
        msg: Message<'_>,
    ) -> Result<String, PromptError> {
        let defs: Vec<ToolDef<'_>> = tools.iter().map(tool_def).collect();
        let mut msgs = Vec::with_capacity(2);
        if let Some(s) = system {
            msgs.push(Message::system(s));
        }
        msgs.push(msg);
        self.render(&msgs, &defs, true)
    }

    /// What follows assistant text already in the cache when `msg` arrives: the end of the
    /// assistant turn, `msg`'s turn and the next generation prompt.
    pub fn after_text(&self, msg: Message<'_>) -> Result<String, PromptError> {
        let prev = [Message::assistant(SENTINEL)];
        self.tail(&prev, &[msg], SENTINEL)
    }

    /// What follows a tool-call block already in the cache: the end of the assistant turn,
    /// the results (`(tool name, content)`, in call order) and the next generation prompt.
    pub fn after_calls(&self, results: &[(&str, &str)]) -> Result<String, PromptError> {
        let calls: Vec<ToolCall<'_>> = results
            .iter()
            .map(|(name, _)| ToolCall {
                id: "",
                name,
                arguments: "{}",
            })
            .collect();
        let prev = [Message::assistant_calls("", &calls)];
        let msgs: Vec<Message<'_>> = results
            .iter()
            .map(|(name, content)| Message::tool("", name, content))
            .collect();
        let close = match self.dialect() {
            Some(Dialect::Atem) => "</atem:function_calls>",
            _ => "</tool_call>",
        };
        self.tail(&prev, &msgs, close)
    }

    /// Renders `prev` and `prev + next`; returns the second's text after the last `mark` of
    /// the first.
    fn tail(
        &self,
        prev: &[Message<'_>],
        next: &[Message<'_>],
        mark: &str,
    ) -> Result<String, PromptError> {
        let before = self.render(prev, &[], false)?;
        let all: Vec<Message<'_>> = prev.iter().chain(next).copied().collect();
        let after = self.render(&all, &[], true)?;
        let cut = before
            .rfind(mark)
            .map(|i| i + mark.len())
            .ok_or(PromptError::Unstable)?;
        if after.get(..cut) != before.get(..cut) {
            return Err(PromptError::Unstable);
        }
        Ok(after[cut..].to_string())
    }

    fn render(
        &self,
        msgs: &[Message<'_>],
        tools: &[ToolDef<'_>],
        gen: bool,
    ) -> Result<String, PromptError> {
        let text: usize = msgs.iter().map(|m| m.content.len()).sum();
        let schemas: usize = tools
            .iter()
            .map(|t| t.parameters.len() + t.description.len() + t.name.len())
            .sum();
        let mut cap = (text + schemas) * 2 + 4096;
        loop {
            let mut buf = vec![0u8; cap];
            let mut out = Out::new(&mut buf);
            match self.template.render(msgs, tools, gen, &mut out) {
                Ok(()) => return Ok(out.as_str().to_string()),
                Err(ChatError::Overflow { .. }) if cap < (1 << 24) => cap *= 4,
                Err(e) => return Err(PromptError::Chat(e)),
            }
        }
    }
}

fn tool_def(t: &ToolDesc) -> ToolDef<'_> {
    ToolDef {
        name: &t.name,
        description: &t.description,
        parameters: &t.schema_json,
    }
}

/// A chat message for a `Send` from `role`.
pub(crate) fn message(role: glimmer_core::proto::Role, content: &str) -> Message<'_> {
    match role {
        glimmer_core::proto::Role::User => Message::user(content),
        glimmer_core::proto::Role::System => Message::system(content),
        glimmer_core::proto::Role::Tool => Message::new(
            Role::Tool {
                call_id: "",
                name: "client",
            },
            content,
        ),
    }
}

//! Streaming tool-call parsers.
//!
//! A [`CallParser`] takes the model's output as it arrives ([`CallParser::push`]) and hands
//! out [`ToolEvent`]s ([`CallParser::next_event`]): plain text as soon as it cannot be the
//! start of a call (a possible partial opening tag is held back), and each call once its
//! block is complete. Everything lives in one caller-lent buffer; a call larger than it
//! fails with [`ChatError::Overflow`](super::ChatError::Overflow).
//!
//! Degradation follows the reference: a well-formed call to a tool that is not offered
//! comes out as text (the whole block, verbatim); a malformed block (bad JSON or markup, or
//! cut off by the end of the stream) is dropped and reported as [`ToolEvent::Malformed`],
//! so only the text before it remains. Unlike the reference, which parses a finished
//! response, decisions are made block by block: calls already handed out stand.
//!
//! Dialects ([`Dialect`]): Hermes JSON (`<tool_call>{…}</tool_call>`), Qwen XML
//! (`<tool_call><function=…>…</tool_call>`) and ATEM XML (Glimmer). Arguments come out
//! as [`CallArgs`]; [`CallArgs::params`] walks them for [`super::schema`].

mod atem;
mod hermes;
mod parser;
mod qwen;
mod scan;
#[cfg(test)]
mod tests;

use super::json;
pub use parser::CallParser;

/// A tool-call syntax.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `<tool_call>{"name": …, "arguments": {…}}</tool_call>` (or a JSON array of calls).
    Hermes,
    /// `<tool_call>\n<function=NAME>\n<parameter=K>\nV\n</parameter>\n</function>\n</tool_call>`.
    QwenXml,
    /// `to=NAME<|message|><atem:function_calls>…</atem:function_calls>`.
    Atem,
}

/// The set of tools a parser accepts calls to.
pub trait ToolSet {
    /// Whether a tool is called `name`.
    fn has_tool(&self, name: &str) -> bool;
}

impl ToolSet for [&str] {
    fn has_tool(&self, name: &str) -> bool {
        self.contains(&name)
    }
}

impl ToolSet for [super::ToolDef<'_>] {
    fn has_tool(&self, name: &str) -> bool {
        self.iter().any(|t| t.name == name)
    }
}

impl ToolSet for [super::schema::ToolSchema<'_>] {
    fn has_tool(&self, name: &str) -> bool {
        self.iter().any(|t| t.name == name)
    }
}

/// Why a call block was dropped.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MalformedCall {
    /// The stream ended inside the block.
    Truncated,
    /// The Hermes body is not valid JSON.
    Json(json::JsonError),
    /// A Hermes element is not a JSON object.
    NotACall,
    /// The call has no usable tool name.
    MissingName,
    /// Hermes `arguments` is not a JSON object.
    BadArguments,
    /// XML markup is broken at this byte offset of the block body.
    BadMarkup {
        /// Offset in the block body.
        at: usize,
    },
    /// The block holds no call.
    Empty,
}

/// One argument of a parsed call, before schema checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Arg<'a> {
    /// Parameter name (JSON string content, still escaped, when `json`).
    pub key: &'a str,
    /// The value: raw JSON when `json`, else verbatim text.
    pub value: &'a str,
    /// Whether this came from JSON arguments.
    pub json: bool,
}

impl Arg<'_> {
    /// Whether the parameter is called `name`.
    pub fn key_is(&self, name: &str) -> bool {
        if self.json {
            json::str_eq(self.key, name)
        } else {
            self.key == name
        }
    }
}

/// A call's arguments, in the form the dialect wrote them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallArgs<'a> {
    /// A raw JSON object (Hermes).
    Json(&'a str),
    /// The parameter list of a Qwen function body.
    Qwen(&'a str),
    /// The parameter list of an ATEM invoke body.
    Atem(&'a str),
}

impl<'a> CallArgs<'a> {
    /// Walks the arguments in order. The block was validated, so items are `Ok`.
    pub fn params(&self) -> Params<'a> {
        Params(match *self {
            CallArgs::Json(o) => ParamsIn::Json(json::members(o)),
            CallArgs::Qwen(s) => ParamsIn::Qwen(qwen::Params::new(s)),
            CallArgs::Atem(s) => ParamsIn::Atem(atem::Params::new(s)),
        })
    }
}

/// Iterator over a call's arguments; see [`CallArgs::params`].
#[derive(Clone, Debug)]
pub struct Params<'a>(ParamsIn<'a>);

#[derive(Clone, Debug)]
enum ParamsIn<'a> {
    Json(json::Members<'a>),
    Qwen(qwen::Params<'a>),
    Atem(atem::Params<'a>),
}

impl<'a> Iterator for Params<'a> {
    type Item = Arg<'a>;

    fn next(&mut self) -> Option<Arg<'a>> {
        match &mut self.0 {
            ParamsIn::Json(m) => m.next().map(|(key, value)| Arg {
                key,
                value,
                json: true,
            }),
            ParamsIn::Qwen(p) => p.next()?.ok(),
            ParamsIn::Atem(p) => p.next()?.ok(),
        }
    }
}

/// A complete tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParsedCall<'a> {
    /// Tool name.
    pub name: &'a str,
    /// Its arguments.
    pub args: CallArgs<'a>,
}

/// What the parser hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolEvent<'a> {
    /// Plain text, to pass on.
    Text(&'a str),
    /// A tool call to run.
    Call(ParsedCall<'a>),
    /// A call block was dropped.
    Malformed(MalformedCall),
}

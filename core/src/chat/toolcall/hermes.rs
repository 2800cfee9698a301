//! Hermes JSON calls: `<tool_call>{"name": "N", "arguments": {...}}</tool_call>`.
//!
//! The body may also be a JSON array of such objects (SmolLM2's own tool format).
//! `arguments` may be missing (no arguments); any other member is ignored.

use super::super::json::{self, Kind};
use super::{CallArgs, MalformedCall, ParsedCall};

/// The calls in a block body, in order; `closed` is false when the closing tag never came.
pub(super) fn calls(body: &str, _closed: bool) -> Calls<'_> {
    match json::parse_value(body) {
        Ok(v) if json::kind(v) == Kind::Array => Calls::Many(json::elements(v)),
        Ok(v) => Calls::One(Some(v)),
        Err(e) => Calls::Bad(Some(MalformedCall::Json(e))),
    }
}

/// Iterator over the calls of a Hermes block.
#[derive(Clone, Debug)]
pub(super) enum Calls<'a> {
    One(Option<&'a str>),
    Many(json::Elements<'a>),
    Bad(Option<MalformedCall>),
}

impl<'a> Iterator for Calls<'a> {
    type Item = Result<ParsedCall<'a>, MalformedCall>;

    fn next(&mut self) -> Option<Self::Item> {
        let v = match self {
            Calls::One(v) => v.take()?,
            Calls::Many(it) => it.next()?,
            Calls::Bad(e) => return e.take().map(Err),
        };
        Some(call(v))
    }
}

fn call(v: &str) -> Result<ParsedCall<'_>, MalformedCall> {
    if json::kind(v) != Kind::Object {
        return Err(MalformedCall::NotACall);
    }
    let name = json::get(v, "name").ok_or(MalformedCall::MissingName)?;
    if json::kind(name) != Kind::String {
        return Err(MalformedCall::MissingName);
    }
    let args = json::get(v, "arguments").unwrap_or("{}");
    if json::kind(args) != Kind::Object {
        return Err(MalformedCall::BadArguments);
    }
    Ok(ParsedCall {
        name: &name[1..name.len() - 1],
        args: CallArgs::Json(args),
    })
}

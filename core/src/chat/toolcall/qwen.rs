//! Qwen XML calls:
//! `<tool_call>\n<function=NAME>\n<parameter=K>\nV\n</parameter>\n</function>\n</tool_call>`.
//!
//! One function per block. A value loses one leading and one trailing newline.

use super::scan::{lit, skip_ws, Match};
use super::{Arg, CallArgs, MalformedCall, ParsedCall};

/// The call in a block body (an iterator of one item).
pub(super) fn calls(
    body: &str,
    _closed: bool,
) -> core::option::IntoIter<Result<ParsedCall<'_>, MalformedCall>> {
    Some(call(body)).into_iter()
}

fn call(body: &str) -> Result<ParsedCall<'_>, MalformedCall> {
    let bad = |at| MalformedCall::BadMarkup { at };
    let i = skip_ws(body, 0);
    let Match::Full(n) = lit(body, i, "<function=") else {
        return Err(bad(i));
    };
    let gt = n + body[n..].find('>').ok_or(bad(n))?;
    let name = body[n..gt].trim();
    if name.is_empty() || name.contains(['<', '\n']) {
        return Err(MalformedCall::MissingName);
    }
    let params_at = gt + 1;
    let end = params_at
        + body[params_at..]
            .find("</function>")
            .ok_or(bad(params_at))?;
    let after = skip_ws(body, end + "</function>".len());
    if after != body.len() {
        return Err(bad(after));
    }
    let params = &body[params_at..end];
    for p in Params::new(params) {
        p?;
    }
    Ok(ParsedCall {
        name,
        args: CallArgs::Qwen(params),
    })
}

/// The parameters of a Qwen function body.
#[derive(Clone, Debug)]
pub(super) struct Params<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Params<'a> {
    pub(super) fn new(s: &'a str) -> Self {
        Params { s, pos: 0 }
    }
}

impl<'a> Iterator for Params<'a> {
    type Item = Result<Arg<'a>, MalformedCall>;

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.s;
        let i = skip_ws(s, self.pos);
        if i >= s.len() {
            return None;
        }
        self.pos = s.len(); // stop after an error
        let bad = |at| Some(Err(MalformedCall::BadMarkup { at }));
        let Match::Full(k) = lit(s, i, "<parameter=") else {
            return bad(i);
        };
        let Some(gt) = s[k..].find('>').map(|g| k + g) else {
            return bad(k);
        };
        let Some(close) = s[gt..].find("</parameter>").map(|c| gt + c) else {
            return bad(gt);
        };
        let mut value = &s[gt + 1..close];
        value = value.strip_prefix('\n').unwrap_or(value);
        value = value.strip_suffix('\n').unwrap_or(value);
        self.pos = close + "</parameter>".len();
        Some(Ok(Arg {
            key: s[k..gt].trim(),
            value,
            json: false,
        }))
    }
}

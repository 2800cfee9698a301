//! ATEM XML calls (Glimmer), with the optional Harmony recipient header in front:
//! ```text
//! [<|start|>assistant][ ]to=NAME[ constrain=X]<|message|><atem:function_calls>
//! <atem:invoke name="NAME">
//! <atem:parameter name="k">VALUE</atem:parameter>
//! </atem:invoke>
//! </atem:function_calls>
//! ```
//! A block may hold several invokes. Values are raw text, kept verbatim. As in the
//! reference parser, a `</atem:parameter>` ends a value only when what follows (after
//! whitespace) is another parameter, the end of the invoke, or the end of the block, so a
//! value may contain the closing tag; likewise for `</atem:invoke>`. At the end of the
//! stream a block without `</atem:function_calls>` is accepted if its invokes are complete.

use super::scan::{followed_by, lit, named_tag, skip_ws, Match};
use super::{Arg, CallArgs, MalformedCall, ParsedCall};

/// The block opener.
pub(super) const OPEN: &str = "<atem:function_calls>";
/// The block closer.
pub(super) const CLOSE: &str = "</atem:function_calls>";
const START: &str = "<|start|>assistant";
const INVOKE: &str = "<atem:invoke";
const INVOKE_END: &str = "</atem:invoke>";
const PARAM: &str = "<atem:parameter";
const PARAM_END: &str = "</atem:parameter>";

fn ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Reads `IDENT(.IDENT)*` at `i` (the recipient of a header).
fn recipient(s: &[u8], mut i: usize) -> Match {
    loop {
        match s.get(i) {
            None => return Match::Partial,
            Some(&b) if ident_start(b) => i += 1,
            Some(_) => return Match::No,
        }
        while s.get(i).is_some_and(|&b| ident_char(b)) {
            i += 1;
        }
        match s.get(i) {
            None => return Match::Partial,
            Some(b'.') => i += 1,
            Some(_) => return Match::Full(i),
        }
    }
}

/// Whether an opener (header + block open, or a bare block open) starts at `s[0]`;
/// `Full(n)` gives where the block body begins.
pub(super) fn opener(s: &str) -> Match {
    match lit(s, 0, OPEN) {
        Match::No => {}
        m => return m,
    }
    let b = s.as_bytes();
    let mut i = match lit(s, 0, START) {
        Match::Full(n) => n,
        Match::Partial => return Match::Partial,
        Match::No => 0,
    };
    match b.get(i) {
        None => return Match::Partial,
        Some(b' ' | b'\n' | b'\t') => i += 1,
        Some(_) => {}
    }
    i = match lit(s, i, "to=") {
        Match::Full(n) => n,
        m => return m,
    };
    i = match recipient(b, i) {
        Match::Full(n) => n,
        m => return m,
    };
    match lit(s, i, " constrain=") {
        Match::Full(n) => {
            i = n;
            while b.get(i).is_some_and(|&c| ident_char(c)) {
                i += 1;
            }
        }
        Match::Partial => return Match::Partial,
        Match::No => {}
    }
    i = match lit(s, i, "<|message|>") {
        Match::Full(n) => n,
        m => return m,
    };
    lit(s, i, OPEN)
}

/// Whether an opener may begin at byte `i` of `s` (a char boundary), given the byte before
/// it (`prev`): a header's `to=` must not continue a word (`goto=`).
pub(super) fn may_open_at(s: &str, i: usize, prev: Option<u8>) -> bool {
    let word_before = prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == b'_');
    match s.as_bytes()[i] {
        b'<' => true,
        b' ' | b'\n' | b'\t' | b't' => !word_before,
        _ => false,
    }
}

/// The invokes of a block body, in order.
pub(super) fn calls(body: &str, _closed: bool) -> Invokes<'_> {
    Invokes {
        s: body,
        pos: 0,
        any: false,
    }
}

/// Iterator over the invokes of an ATEM block.
#[derive(Clone, Debug)]
pub(super) struct Invokes<'a> {
    s: &'a str,
    pos: usize,
    any: bool,
}

impl<'a> Iterator for Invokes<'a> {
    type Item = Result<ParsedCall<'a>, MalformedCall>;

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.s;
        let i = skip_ws(s, self.pos);
        if i >= s.len() {
            return (!core::mem::replace(&mut self.any, true)).then_some(Err(MalformedCall::Empty));
        }
        self.any = true;
        self.pos = s.len(); // stop after an error
        let Some((name, body_at)) = named_tag(s, i, INVOKE) else {
            return Some(Err(MalformedCall::BadMarkup { at: i }));
        };
        let mut from = body_at;
        let end = loop {
            let Some(e) = s[from..].find(INVOKE_END).map(|e| from + e) else {
                return Some(Err(MalformedCall::BadMarkup { at: body_at }));
            };
            if followed_by(s, e + INVOKE_END.len(), &[INVOKE]) {
                break e;
            }
            from = e + INVOKE_END.len();
        };
        let body = &s[body_at..end];
        if let Some(Err(e)) = Params::new(body).find(Result::is_err) {
            return Some(Err(e));
        }
        self.pos = end + INVOKE_END.len();
        Some(Ok(ParsedCall {
            name,
            args: CallArgs::Atem(body),
        }))
    }
}

/// The parameters of an invoke body.
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
        let Some((key, at)) = named_tag(s, i, PARAM) else {
            return Some(Err(MalformedCall::BadMarkup { at: i }));
        };
        let mut from = at;
        loop {
            let Some(e) = s[from..].find(PARAM_END).map(|e| from + e) else {
                return Some(Err(MalformedCall::BadMarkup { at }));
            };
            let next = e + PARAM_END.len();
            if followed_by(s, next, &[PARAM]) {
                self.pos = next;
                return Some(Ok(Arg {
                    key,
                    value: &s[at..e],
                    json: false,
                }));
            }
            from = next;
        }
    }
}

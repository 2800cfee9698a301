//! The byte-level state machine behind [`CallConstraint`](super::CallConstraint).
//!
//! [`State`] is small and `Copy`, so `allows` runs a piece on a copy and `push` keeps it.
//! Name-like tokens (tool names, keys, enum options, `true`/`false`, ATEM tags) are matched
//! against a set of candidates kept as a bit mask, `pos` bytes in.

use super::num;
use crate::chat::schema::{ParamType, ToolSchema};

/// Longest run of whitespace allowed between two tokens.
pub const MAX_WS: u8 = 16;
/// Longest number (sign, digits and point) allowed, in bytes.
pub const NUM_MAX: usize = 32;

const BOOLS: [&str; 2] = ["true", "false"];
const ATEM_TAGS: [&str; 2] = ["<atem:parameter name=\"", "</atem:invoke>"];
const PARAM_END: &[u8] = b"</atem:parameter>";
const END_TAG: &[u8] = b"</tool_call>";

/// A fixed piece of syntax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lit {
    Open,
    NameKey,
    NameColon,
    NameQuote,
    Comma,
    ArgsKey,
    ArgsColon,
    ArgsOpen,
    KeyColon,
    Close,
    EndTag,
    Invoke,
    InvokeGt,
    ParamGt,
    ParamEnd,
    BlockEnd,
}

impl Lit {
    fn text(self) -> &'static [u8] {
        match self {
            Lit::Open | Lit::ArgsOpen => b"{",
            Lit::NameKey => b"\"name\"",
            Lit::NameColon | Lit::ArgsColon | Lit::KeyColon => b":",
            Lit::NameQuote => b"\"",
            Lit::Comma => b",",
            Lit::ArgsKey => b"\"arguments\"",
            Lit::Close => b"}",
            Lit::EndTag => END_TAG,
            Lit::Invoke => b"<atem:invoke name=\"",
            Lit::InvokeGt | Lit::ParamGt => b">",
            Lit::ParamEnd => PARAM_END,
            Lit::BlockEnd => b"</atem:function_calls>",
        }
    }

    /// Whether whitespace may come before it (a value's end tag is value text in ATEM).
    fn ws(self) -> bool {
        self != Lit::ParamEnd
    }
}

/// Where a name-like token's candidates come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Src {
    Tools,
    Params,
    Options,
    Bools,
    AtemTags,
}

/// How a name-like token ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// At a `"` (not part of it), once a candidate is matched whole.
    Quoted,
    /// As soon as a candidate is matched whole (no candidate is a prefix of another).
    Exact,
    /// At the first byte that continues no candidate, which is then read again.
    Unquoted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Matching a literal, `pos` bytes in.
    Lit(Lit),
    /// Matching a name-like token.
    Word(Src, End),
    /// Hermes, after the arguments' `{`: `}` or a key.
    ArgsStart,
    /// Hermes, after `,`: a key.
    KeyOpen,
    /// The first byte of a value.
    ValueStart,
    /// Inside a JSON string; `pos`: 0 plain, 1 after `\`, 2..=5 in a `\u` escape.
    Str,
    /// Inside an ATEM string value; `pos` bytes of `</atem:parameter>` matched.
    AtemStr,
    /// Inside a number, held in `num`.
    Num,
    /// Hermes, after a value: `,` or `}`.
    AfterValue,
    /// ATEM, between parameters: another parameter or `</atem:invoke>`.
    AtemArgs,
    /// The call is complete.
    Done,
}

/// Where the machine is.
#[derive(Clone, Copy, Debug)]
pub(super) struct State {
    phase: Phase,
    pos: u16,
    /// Whitespace bytes in the current run between tokens.
    ws: u8,
    /// Whether the tool name is complete (`tool` is set).
    named: bool,
    tool: u8,
    param: u8,
    /// Parameters given (bit i: parameter i of the tool).
    seen: u64,
    /// Candidates still matching a name-like token.
    cand: u64,
    /// Bytes of `</tool_call>` that end the raw text of a JSON string.
    tag: u8,
    num_len: u8,
    num: [u8; NUM_MAX],
}

impl State {
    pub(super) fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The chosen tool, once its name is complete.
    pub(super) fn tool(&self) -> Option<usize> {
        self.named.then_some(self.tool as usize)
    }

    fn go(&mut self, phase: Phase) {
        self.phase = phase;
        self.pos = 0;
    }

    /// Takes one byte of whitespace between tokens.
    fn space(&mut self) -> bool {
        self.ws += 1;
        self.ws <= MAX_WS
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Mask of the first `n` bits.
fn first_bits(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// The tools and dialect a machine runs over.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ctx<'a> {
    pub(super) tools: &'a [ToolSchema<'a>],
    pub(super) atem: bool,
}

impl<'a> Ctx<'a> {
    pub(super) fn start(&self) -> State {
        State {
            phase: Phase::Lit(if self.atem { Lit::Invoke } else { Lit::Open }),
            pos: 0,
            ws: 0,
            named: false,
            tool: 0,
            param: 0,
            seen: 0,
            cand: 0,
            tag: 0,
            num_len: 0,
            num: [0; NUM_MAX],
        }
    }

    /// Feeds one byte; `false` (with `st` in an unspecified state) when it is not allowed.
    pub(super) fn step(&self, st: &mut State, b: u8) -> bool {
        let ok = self.step_inner(st, b);
        if ok && !is_ws(b) {
            st.ws = 0;
        }
        ok
    }

    fn step_inner(&self, st: &mut State, b: u8) -> bool {
        loop {
            match st.phase {
                Phase::Done => return false,
                Phase::Lit(l) => {
                    if st.pos == 0 && l.ws() && is_ws(b) {
                        return st.space();
                    }
                    let text = l.text();
                    if text.get(st.pos as usize) != Some(&b) {
                        return false;
                    }
                    st.pos += 1;
                    if st.pos as usize == text.len() {
                        self.lit_done(st, l);
                    }
                    return true;
                }
                Phase::Word(src, end) => match self.word_step(st, src, end, b) {
                    Some(again) if again => continue,
                    Some(_) => return true,
                    None => return false,
                },
                Phase::ArgsStart | Phase::KeyOpen | Phase::AfterValue => {
                    if is_ws(b) {
                        return st.space();
                    }
                    let after_value = st.phase == Phase::AfterValue;
                    let first = st.phase == Phase::ArgsStart;
                    match b {
                        b'"' if !after_value => return self.open_key(st),
                        b',' if after_value && self.unseen(st) != 0 => st.go(Phase::KeyOpen),
                        b'}' if (first || after_value) && self.required_met(st) => {
                            st.go(Phase::Lit(Lit::Close))
                        }
                        _ => return false,
                    }
                    return true;
                }
                Phase::AtemArgs => {
                    if is_ws(b) {
                        return st.space();
                    }
                    let more = u64::from(self.unseen(st) != 0);
                    let close = u64::from(self.required_met(st)) << 1;
                    st.cand = more | close;
                    st.go(Phase::Word(Src::AtemTags, End::Exact));
                }
                Phase::ValueStart => {
                    let Some(ty) = self.param_type(st) else {
                        return false;
                    };
                    if !self.atem && is_ws(b) {
                        return st.space();
                    }
                    match ty {
                        ParamType::String if self.atem => st.go(Phase::AtemStr),
                        ParamType::String if b == b'"' => {
                            st.tag = 0;
                            st.go(Phase::Str);
                            return true;
                        }
                        ParamType::Enum(opts) if self.atem || b == b'"' => {
                            st.cand = first_bits(opts.len());
                            let end = if self.atem {
                                End::Unquoted
                            } else {
                                End::Quoted
                            };
                            st.go(Phase::Word(Src::Options, end));
                            if !self.atem {
                                return true;
                            }
                        }
                        ParamType::Boolean => {
                            st.cand = 0b11;
                            st.go(Phase::Word(Src::Bools, End::Exact));
                        }
                        ParamType::Integer { .. } | ParamType::Number { .. } => {
                            st.num_len = 0;
                            st.go(Phase::Num);
                        }
                        _ => return false,
                    }
                }
                Phase::Str => return self.str_step(st, b),
                Phase::AtemStr => return atem_str_step(st, b),
                Phase::Num => {
                    let Some(ty) = self.param_type(st) else {
                        return false;
                    };
                    let len = st.num_len as usize;
                    let mut t = [0u8; NUM_MAX];
                    t[..len].copy_from_slice(&st.num[..len]);
                    if len < NUM_MAX {
                        t[len] = b;
                        if num::prefix_ok(&t[..=len], &ty) {
                            st.num = t;
                            st.num_len += 1;
                            return true;
                        }
                    }
                    if !num::complete_ok(&t[..len], &ty) {
                        return false;
                    }
                    self.value_done(st);
                }
            }
        }
    }

    /// Steps a name-like token: `Some(true)` when the byte must be read again.
    fn word_step(&self, st: &mut State, src: Src, end: End, b: u8) -> Option<bool> {
        let pos = st.pos as usize;
        if end == End::Quoted && b == b'"' {
            // Names hold no quotes, so a quote can only end the token.
            let i = self.whole(st, src, st.cand, pos)?;
            self.word_done(st, src, i);
            return Some(false);
        }
        let mut next = 0u64;
        for i in 0..64 {
            if st.cand & (1 << i) != 0 && self.word(st, src, i).get(pos) == Some(&b) {
                next |= 1 << i;
            }
        }
        if next != 0 {
            st.cand = next;
            st.pos += 1;
            if end == End::Exact {
                if let Some(i) = self.whole(st, src, next, pos + 1) {
                    self.word_done(st, src, i);
                }
            }
            return Some(false);
        }
        if end == End::Unquoted {
            let i = self.whole(st, src, st.cand, pos)?;
            self.word_done(st, src, i);
            return Some(true);
        }
        None
    }

    /// The first candidate in `cand` that is `len` bytes long.
    fn whole(&self, st: &State, src: Src, cand: u64, len: usize) -> Option<usize> {
        (0..64).find(|&i| cand & (1 << i) != 0 && self.word(st, src, i).len() == len)
    }

    /// Candidate `i` of `src`.
    fn word(&self, st: &State, src: Src, i: usize) -> &'a [u8] {
        let s: &'a str = match src {
            Src::Tools => self.tools.get(i).map_or("", |t| t.name),
            Src::Params => self.param(st, i).map_or("", |p| p.name),
            Src::Options => match self.param_type(st) {
                Some(ParamType::Enum(opts)) => opts.get(i).copied().unwrap_or(""),
                _ => "",
            },
            Src::Bools => BOOLS.get(i).copied().unwrap_or(""),
            Src::AtemTags => ATEM_TAGS.get(i).copied().unwrap_or(""),
        };
        s.as_bytes()
    }

    fn word_done(&self, st: &mut State, src: Src, i: usize) {
        // i < 64 (a bit index), so the casts are lossless.
        match src {
            Src::Tools => {
                st.tool = i as u8;
                st.named = true;
                st.seen = 0;
                st.go(Phase::Lit(if self.atem {
                    Lit::InvokeGt
                } else {
                    Lit::Comma
                }));
            }
            Src::Params => {
                st.param = i as u8;
                st.seen |= 1 << i;
                st.go(Phase::Lit(if self.atem {
                    Lit::ParamGt
                } else {
                    Lit::KeyColon
                }));
            }
            Src::Options | Src::Bools => self.value_done(st),
            Src::AtemTags if i == 0 => self.key_word(st),
            Src::AtemTags => st.go(Phase::Lit(Lit::BlockEnd)),
        }
    }

    fn lit_done(&self, st: &mut State, l: Lit) {
        let next = match l {
            Lit::Open => Phase::Lit(Lit::NameKey),
            Lit::NameKey => Phase::Lit(Lit::NameColon),
            Lit::NameColon => Phase::Lit(Lit::NameQuote),
            Lit::NameQuote | Lit::Invoke => {
                st.cand = first_bits(self.tools.len());
                Phase::Word(Src::Tools, End::Quoted)
            }
            Lit::Comma => Phase::Lit(Lit::ArgsKey),
            Lit::ArgsKey => Phase::Lit(Lit::ArgsColon),
            Lit::ArgsColon => Phase::Lit(Lit::ArgsOpen),
            Lit::ArgsOpen => Phase::ArgsStart,
            Lit::KeyColon | Lit::ParamGt => Phase::ValueStart,
            Lit::Close => Phase::Lit(Lit::EndTag),
            Lit::InvokeGt | Lit::ParamEnd => Phase::AtemArgs,
            Lit::EndTag | Lit::BlockEnd => Phase::Done,
        };
        st.go(next);
    }

    /// A key's opening quote (Hermes).
    fn open_key(&self, st: &mut State) -> bool {
        if self.unseen(st) == 0 {
            return false;
        }
        self.key_word(st);
        true
    }

    fn key_word(&self, st: &mut State) {
        st.cand = self.unseen(st);
        st.go(Phase::Word(Src::Params, End::Quoted));
    }

    fn value_done(&self, st: &mut State) {
        st.go(if self.atem {
            Phase::Lit(Lit::ParamEnd)
        } else {
            Phase::AfterValue
        });
    }

    fn str_step(&self, st: &mut State, b: u8) -> bool {
        match (st.pos, b) {
            (0, b'"') => self.value_done(st),
            (0, b'\\') => {
                st.pos = 1;
                st.tag = 0;
            }
            (0, b) => {
                // `</tool_call>` would end the block early: refuse its last byte.
                if END_TAG.get(st.tag as usize) == Some(&b) {
                    st.tag += 1;
                } else {
                    st.tag = u8::from(b == b'<');
                }
                return b >= 0x20 && st.tag as usize != END_TAG.len();
            }
            (1, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => st.pos = 0,
            (1, b'u') => st.pos = 2,
            (2..=5, b) if b.is_ascii_hexdigit() => {
                st.pos = if st.pos == 5 { 0 } else { st.pos + 1 }
            }
            _ => return false,
        }
        true
    }

    fn params(&self, st: &State) -> &'a [crate::chat::schema::Param<'a>] {
        self.tools.get(st.tool as usize).map_or(&[], |t| t.params)
    }

    fn param(&self, st: &State, i: usize) -> Option<&'a crate::chat::schema::Param<'a>> {
        self.params(st).get(i)
    }

    fn param_type(&self, st: &State) -> Option<ParamType<'a>> {
        self.param(st, st.param as usize).map(|p| p.ty)
    }

    /// Parameters not given yet.
    fn unseen(&self, st: &State) -> u64 {
        first_bits(self.params(st).len()) & !st.seen
    }

    fn required_met(&self, st: &State) -> bool {
        let mut params = self.params(st).iter().enumerate();
        params.all(|(i, p)| !p.required || st.seen & (1 << i) != 0)
    }
}

/// Raw ATEM string text: anything without `</`, ended by `</atem:parameter>`.
fn atem_str_step(st: &mut State, b: u8) -> bool {
    match st.pos {
        0 => st.pos = u16::from(b == b'<'),
        1 if b == b'/' => st.pos = 2,
        1 => st.pos = u16::from(b == b'<'),
        p => {
            if PARAM_END.get(p as usize) != Some(&b) {
                return false;
            }
            st.pos += 1;
            if st.pos as usize == PARAM_END.len() {
                st.go(Phase::AtemArgs);
            }
        }
    }
    true
}

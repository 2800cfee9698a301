//! The streaming state machine behind [`CallParser`].

use super::scan::{find_marker, Match};
use super::{atem, hermes, qwen, Dialect, MalformedCall, ParsedCall, ToolEvent, ToolSet};
use crate::chat::ChatError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Scanning text from offset 0.
    Text,
    /// A block opens at 0; its body starts at `body`.
    Block { body: usize },
    /// Handing out the calls of the valid block `[0, end)` whose body is `[body, body_end)`.
    Emit {
        body: usize,
        body_end: usize,
        end: usize,
        next: usize,
    },
}

/// Splits streamed model output into text and tool calls; see the module docs.
pub struct CallParser<'b, 't, T: ?Sized> {
    dialect: Dialect,
    tools: &'t T,
    buf: &'b mut [u8],
    len: usize,
    /// Bytes at the front already handed out; dropped on the next call.
    done: usize,
    /// The last byte handed out as text (for ATEM's word-boundary rule).
    prev: Option<u8>,
    state: State,
    finished: bool,
}

impl<'b, 't, T: ToolSet + ?Sized> CallParser<'b, 't, T> {
    /// A parser for `dialect` accepting calls to `tools`, buffering in `buf`.
    pub fn new(dialect: Dialect, tools: &'t T, buf: &'b mut [u8]) -> Self {
        CallParser {
            dialect,
            tools,
            buf,
            len: 0,
            done: 0,
            prev: None,
            state: State::Text,
            finished: false,
        }
    }

    /// Appends a piece of output. Fails, taking nothing, when the buffer cannot hold it.
    pub fn push(&mut self, piece: &str) -> Result<(), ChatError> {
        self.compact();
        let room = self.buf.len() - self.len;
        if piece.len() > room {
            return Err(ChatError::Overflow {
                needed: piece.len() - room,
            });
        }
        self.buf[self.len..self.len + piece.len()].copy_from_slice(piece.as_bytes());
        self.len += piece.len();
        Ok(())
    }

    /// Marks the end of the output: held text is released and an open block is settled.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// Forgets everything, ready for a new turn.
    pub fn reset(&mut self) {
        self.len = 0;
        self.done = 0;
        self.prev = None;
        self.state = State::Text;
        self.finished = false;
    }

    /// Bytes held (not yet handed out).
    pub fn buffered(&self) -> usize {
        self.len - self.done
    }

    /// The next event, or `None` until more output is pushed (or, after
    /// [`finish`](Self::finish), when everything was handed out).
    pub fn next_event(&mut self) -> Option<ToolEvent<'_>> {
        loop {
            self.compact();
            match self.state {
                State::Text => {
                    let (at, open) = self.find_open();
                    if at > 0 {
                        self.done = at;
                        self.prev = self.buf.get(at - 1).copied();
                        return Some(ToolEvent::Text(self.text(0, at)));
                    }
                    match open {
                        Some(body) => self.state = State::Block { body },
                        None => return None,
                    }
                }
                State::Block { body } => return self.settle_block(body),
                State::Emit {
                    body,
                    body_end,
                    end,
                    next,
                } => {
                    if self
                        .nth_call(body, body_end, end, next)
                        .is_some_and(|c| c.is_ok())
                    {
                        self.state = State::Emit {
                            body,
                            body_end,
                            end,
                            next: next + 1,
                        };
                        let call = self.nth_call(body, body_end, end, next);
                        return call.and_then(Result::ok).map(ToolEvent::Call);
                    }
                    self.done = end;
                    self.prev = None;
                    self.state = State::Text;
                }
            }
        }
    }

    /// Where text ends: `(at, Some(body))` when a block opens at `at` with its body at
    /// `body` (relative to `at`), `(at, None)` when text may be handed out up to `at`.
    fn find_open(&self) -> (usize, Option<usize>) {
        let s = self.text(0, self.len);
        let (at, full) = match self.dialect {
            Dialect::Hermes | Dialect::QwenXml => match find_marker(s, "<tool_call>") {
                Ok(Some(i)) => (i, Some(i + "<tool_call>".len())),
                Ok(None) => (s.len(), None),
                Err(i) => (i, None),
            },
            Dialect::Atem => atem_open(s, self.prev),
        };
        match full {
            Some(body) if at == 0 => (0, Some(body)),
            Some(_) => (at, None),
            None if self.finished => (s.len(), None),
            None => (at, None),
        }
    }

    fn settle_block(&mut self, body: usize) -> Option<ToolEvent<'_>> {
        let close = match self.dialect {
            Dialect::Hermes | Dialect::QwenXml => "</tool_call>",
            Dialect::Atem => atem::CLOSE,
        };
        let s = self.text(0, self.len);
        let (body_end, end, closed) = match s[body..].find(close) {
            Some(i) => (body + i, body + i + close.len(), true),
            None if self.finished => (s.len(), s.len(), false),
            None => return None,
        };
        let verdict = check(self.dialect, &s[body..body_end], closed, self.tools);
        match verdict {
            Ok(()) => {
                self.state = State::Emit {
                    body,
                    body_end,
                    end,
                    next: 0,
                };
                self.next_event()
            }
            Err(Verdict::Undefined) => {
                self.done = end;
                self.prev = self.buf.get(end.wrapping_sub(1)).copied();
                self.state = State::Text;
                Some(ToolEvent::Text(self.text(0, end)))
            }
            Err(Verdict::Malformed(m)) => {
                self.done = end;
                self.prev = None;
                self.state = State::Text;
                Some(ToolEvent::Malformed(if closed {
                    m
                } else {
                    MalformedCall::Truncated
                }))
            }
        }
    }

    fn nth_call(
        &self,
        body: usize,
        body_end: usize,
        end: usize,
        n: usize,
    ) -> Option<Result<ParsedCall<'_>, MalformedCall>> {
        let closed = end > body_end;
        let s = self.text(body, body_end);
        match self.dialect {
            Dialect::Hermes => hermes::calls(s, closed).nth(n),
            Dialect::QwenXml => qwen::calls(s, closed).nth(n),
            Dialect::Atem => atem::calls(s, closed).nth(n),
        }
    }

    fn text(&self, from: usize, to: usize) -> &str {
        // Only whole &str pieces are copied in and cuts fall before ASCII marker bytes,
        // so every range used here lies on char boundaries.
        core::str::from_utf8(&self.buf[from..to]).unwrap_or("")
    }

    fn compact(&mut self) {
        if self.done > 0 {
            self.buf.copy_within(self.done..self.len, 0);
            self.len -= self.done;
            self.done = 0;
        }
    }
}

enum Verdict {
    Undefined,
    Malformed(MalformedCall),
}

/// Validates every call of a block body and checks the tools exist.
fn check<T: ToolSet + ?Sized>(
    dialect: Dialect,
    body: &str,
    closed: bool,
    tools: &T,
) -> Result<(), Verdict> {
    let mut undefined = false;
    let mut each = |c: Result<ParsedCall<'_>, MalformedCall>| match c {
        Ok(c) => {
            undefined |= !tools.has_tool(c.name);
            Ok(())
        }
        Err(m) => Err(Verdict::Malformed(m)),
    };
    match dialect {
        Dialect::Hermes => hermes::calls(body, closed).try_for_each(&mut each)?,
        Dialect::QwenXml => qwen::calls(body, closed).try_for_each(&mut each)?,
        Dialect::Atem => atem::calls(body, closed).try_for_each(&mut each)?,
    }
    if undefined {
        return Err(Verdict::Undefined);
    }
    Ok(())
}

/// The first ATEM opener in `s`: `(at, Some(body))` when complete, `(at, None)` when `s`
/// ends inside a possible one (or `at == s.len()` when there is none).
fn atem_open(s: &str, prev: Option<u8>) -> (usize, Option<usize>) {
    let b = s.as_bytes();
    for (i, _) in s.char_indices() {
        let before = if i == 0 { prev } else { Some(b[i - 1]) };
        if !atem::may_open_at(s, i, before) {
            continue;
        }
        match atem::opener(&s[i..]) {
            Match::Full(n) => return (i, Some(i + n)),
            Match::Partial => return (i, None),
            Match::No => {}
        }
    }
    (s.len(), None)
}

//! A small allocation-free JSON scanner: validates values, walks objects and arrays, and
//! compares, unescapes, escapes and compacts strings. Values stay as raw slices of the input.

use super::{ChatError, Out};

/// Deepest nesting of arrays and objects accepted.
pub const MAX_DEPTH: usize = 32;

/// Why a JSON text was rejected; `at` is the byte offset of the problem.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JsonError {
    /// The input ended inside a value.
    Eof {
        /// Byte offset.
        at: usize,
    },
    /// An unexpected byte.
    Unexpected {
        /// Byte offset.
        at: usize,
    },
    /// A bad escape sequence or control character in a string.
    BadString {
        /// Byte offset.
        at: usize,
    },
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep {
        /// Byte offset.
        at: usize,
    },
    /// Something other than whitespace follows the value.
    Trailing {
        /// Byte offset.
        at: usize,
    },
    /// The value is not of the kind required here (object expected, …).
    WrongKind {
        /// Byte offset.
        at: usize,
    },
}

/// The kind of a JSON value, from its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `{…}`
    Object,
    /// `[…]`
    Array,
    /// `"…"`
    String,
    /// A number.
    Number,
    /// `true` / `false`.
    Bool,
    /// `null`.
    Null,
}

/// The kind of the raw value `v` (which must be valid JSON, as returned by this module).
pub fn kind(v: &str) -> Kind {
    match v.as_bytes().first() {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        Some(b'"') => Kind::String,
        Some(b't' | b'f') => Kind::Bool,
        Some(b'n') => Kind::Null,
        _ => Kind::Number,
    }
}

/// Index of the first non-whitespace byte at or after `i`.
pub fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while matches!(s.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Checks that `text` is exactly one JSON value (surrounding whitespace allowed) and
/// returns it trimmed.
pub fn parse_value(text: &str) -> Result<&str, JsonError> {
    let s = text.as_bytes();
    let start = skip_ws(s, 0);
    let end = value_end(s, start, 0)?;
    let after = skip_ws(s, end);
    if after != s.len() {
        return Err(JsonError::Trailing { at: after });
    }
    Ok(&text[start..end])
}

/// Like [`parse_value`], and the value must be an object.
pub fn parse_object(text: &str) -> Result<&str, JsonError> {
    let v = parse_value(text)?;
    if kind(v) != Kind::Object {
        return Err(JsonError::WrongKind { at: 0 });
    }
    Ok(v)
}

/// End (exclusive) of the value starting at `i`, validating it.
pub fn value_end(s: &[u8], i: usize, depth: usize) -> Result<usize, JsonError> {
    match s.get(i) {
        None => Err(JsonError::Eof { at: i }),
        Some(b'"') => string_end(s, i),
        Some(b'{') | Some(b'[') => container_end(s, i, depth),
        Some(b't') => literal_end(s, i, b"true"),
        Some(b'f') => literal_end(s, i, b"false"),
        Some(b'n') => literal_end(s, i, b"null"),
        Some(b'-' | b'0'..=b'9') => number_end(s, i),
        Some(_) => Err(JsonError::Unexpected { at: i }),
    }
}

fn literal_end(s: &[u8], i: usize, lit: &[u8]) -> Result<usize, JsonError> {
    for (k, &want) in lit.iter().enumerate() {
        match s.get(i + k) {
            None => return Err(JsonError::Eof { at: i + k }),
            Some(&b) if b == want => {}
            Some(_) => return Err(JsonError::Unexpected { at: i + k }),
        }
    }
    Ok(i + lit.len())
}

fn digits(s: &[u8], mut i: usize) -> usize {
    while matches!(s.get(i), Some(b'0'..=b'9')) {
        i += 1;
    }
    i
}

fn number_end(s: &[u8], mut i: usize) -> Result<usize, JsonError> {
    if s.get(i) == Some(&b'-') {
        i += 1;
    }
    match s.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(s, i),
        None => return Err(JsonError::Eof { at: i }),
        Some(_) => return Err(JsonError::Unexpected { at: i }),
    }
    if s.get(i) == Some(&b'.') {
        let j = digits(s, i + 1);
        if j == i + 1 {
            return Err(JsonError::Unexpected { at: j });
        }
        i = j;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let j = digits(s, i);
        if j == i {
            return Err(JsonError::Unexpected { at: j });
        }
        i = j;
    }
    Ok(i)
}

fn string_end(s: &[u8], i: usize) -> Result<usize, JsonError> {
    let mut j = i + 1;
    loop {
        match s.get(j) {
            None => return Err(JsonError::Eof { at: j }),
            Some(b'"') => return Ok(j + 1),
            Some(b'\\') => match s.get(j + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => j += 2,
                Some(b'u') => {
                    let hex = s.get(j + 2..j + 6).ok_or(JsonError::Eof { at: j })?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return Err(JsonError::BadString { at: j });
                    }
                    j += 6;
                }
                None => return Err(JsonError::Eof { at: j + 1 }),
                Some(_) => return Err(JsonError::BadString { at: j }),
            },
            Some(&b) if b < 0x20 => return Err(JsonError::BadString { at: j }),
            Some(_) => j += 1,
        }
    }
}

fn container_end(s: &[u8], i: usize, depth: usize) -> Result<usize, JsonError> {
    if depth >= MAX_DEPTH {
        return Err(JsonError::TooDeep { at: i });
    }
    let object = s[i] == b'{';
    let close = if object { b'}' } else { b']' };
    let mut j = skip_ws(s, i + 1);
    if s.get(j) == Some(&close) {
        return Ok(j + 1);
    }
    loop {
        if object {
            if s.get(j) != Some(&b'"') {
                return Err(eof_or(s, j));
            }
            j = skip_ws(s, string_end(s, j)?);
            if s.get(j) != Some(&b':') {
                return Err(eof_or(s, j));
            }
            j = skip_ws(s, j + 1);
        }
        j = skip_ws(s, value_end(s, j, depth + 1)?);
        match s.get(j) {
            Some(b',') => j = skip_ws(s, j + 1),
            Some(&b) if b == close => return Ok(j + 1),
            _ => return Err(eof_or(s, j)),
        }
    }
}

fn eof_or(s: &[u8], j: usize) -> JsonError {
    if j >= s.len() {
        JsonError::Eof { at: j }
    } else {
        JsonError::Unexpected { at: j }
    }
}

/// Iterates the members of a valid raw object (as returned by [`parse_object`]):
/// `(raw key content without quotes, raw value)`.
#[derive(Clone, Debug)]
pub struct Members<'a> {
    text: &'a str,
    pos: usize,
}

/// The members of `object`, which must be a valid raw JSON object.
pub fn members(object: &str) -> Members<'_> {
    Members {
        text: object,
        pos: 1,
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.text.as_bytes();
        let k = skip_ws(s, self.pos);
        if s.get(k) != Some(&b'"') {
            self.pos = s.len();
            return None;
        }
        let k_end = string_end(s, k).ok()?;
        let v = skip_ws(s, skip_ws(s, k_end) + 1);
        let v_end = value_end(s, v, 0).ok()?;
        let after = skip_ws(s, v_end);
        self.pos = after + 1; // past ',' or the closing brace
        Some((&self.text[k + 1..k_end - 1], &self.text[v..v_end]))
    }
}

/// Iterates the elements of a valid raw array.
#[derive(Clone, Debug)]
pub struct Elements<'a> {
    text: &'a str,
    pos: usize,
}

/// The elements of `array`, which must be a valid raw JSON array.
pub fn elements(array: &str) -> Elements<'_> {
    Elements {
        text: array,
        pos: 1,
    }
}

impl<'a> Iterator for Elements<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let s = self.text.as_bytes();
        let v = skip_ws(s, self.pos);
        if matches!(s.get(v), None | Some(b']')) {
            self.pos = s.len();
            return None;
        }
        let v_end = value_end(s, v, 0).ok()?;
        self.pos = skip_ws(s, v_end) + 1;
        Some(&self.text[v..v_end])
    }
}

/// The value of member `key` (plain text, compared against unescaped keys) in `object`.
pub fn get<'a>(object: &'a str, key: &str) -> Option<&'a str> {
    members(object)
        .find(|(k, _)| str_eq(k, key))
        .map(|(_, v)| v)
}

/// Decodes the escapes of raw string content (no quotes), char by char.
pub fn unescape(raw: &str) -> Unescape<'_> {
    Unescape { rest: raw }
}

/// Iterator of the chars of raw JSON string content; see [`unescape`]. Invalid escapes
/// (not produced by the validator) and lone surrogates yield U+FFFD.
#[derive(Clone, Debug)]
pub struct Unescape<'a> {
    rest: &'a str,
}

impl Unescape<'_> {
    fn hex4(&mut self) -> Option<u32> {
        let h = self.rest.get(..4)?;
        self.rest = &self.rest[4..];
        u32::from_str_radix(h, 16).ok()
    }
}

impl Iterator for Unescape<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        let mut chars = self.rest.chars();
        let c = chars.next()?;
        self.rest = chars.as_str();
        if c != '\\' {
            return Some(c);
        }
        let mut chars = self.rest.chars();
        let e = chars.next().unwrap_or('\u{FFFD}');
        self.rest = chars.as_str();
        Some(match e {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'b' => '\u{8}',
            'f' => '\u{C}',
            'u' => {
                let hi = self.hex4().unwrap_or(0xFFFD);
                if (0xD800..0xDC00).contains(&hi) && self.rest.starts_with("\\u") {
                    self.rest = &self.rest[2..];
                    let lo = self.hex4().unwrap_or(0);
                    let c = 0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF);
                    char::from_u32(c).unwrap_or('\u{FFFD}')
                } else {
                    char::from_u32(hi).unwrap_or('\u{FFFD}')
                }
            }
            other => other,
        })
    }
}

/// Whether raw string content `raw` decodes to `plain`.
pub fn str_eq(raw: &str, plain: &str) -> bool {
    if !raw.contains('\\') {
        return raw == plain;
    }
    unescape(raw).eq(plain.chars())
}

/// Writes `raw` string content unescaped.
pub fn write_unescaped(raw: &str, out: &mut Out<'_>) -> Result<(), ChatError> {
    let mut buf = [0u8; 4];
    unescape(raw).try_for_each(|c| out.push(c.encode_utf8(&mut buf)))
}

/// Writes `s` as a quoted JSON string.
pub fn write_string(s: &str, out: &mut Out<'_>) -> Result<(), ChatError> {
    out.push("\"")?;
    write_escaped(s, out)?;
    out.push("\"")
}

/// Writes `s` JSON-escaped, without quotes.
pub fn write_escaped(s: &str, out: &mut Out<'_>) -> Result<(), ChatError> {
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push(&s[start..i])?;
        if esc.is_empty() {
            let hex = b"0123456789abcdef";
            let v = c as usize;
            let code = [b'\\', b'u', b'0', b'0', hex[v >> 4], hex[v & 15]];
            out.push(core::str::from_utf8(&code).unwrap_or(""))?;
        } else {
            out.push(esc)?;
        }
        start = i + c.len_utf8();
    }
    out.push(&s[start..])
}

/// Writes the valid raw value `v` without insignificant whitespace.
pub fn write_compact(v: &str, out: &mut Out<'_>) -> Result<(), ChatError> {
    let s = v.as_bytes();
    let (mut i, mut start) = (0, 0);
    while i < s.len() {
        match s[i] {
            b'"' => i = string_end(s, i).unwrap_or(s.len()),
            b' ' | b'\t' | b'\n' | b'\r' => {
                out.push(&v[start..i])?;
                i = skip_ws(s, i);
                start = i;
            }
            _ => i += 1,
        }
    }
    out.push(&v[start..])
}

#[cfg(test)]
mod tests;

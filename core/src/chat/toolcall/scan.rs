//! Text matching helpers shared by the dialects.

/// How a text matches a pattern that may still be arriving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Match {
    /// It matches, using this many bytes.
    Full(usize),
    /// The text ends early but is a prefix of a possible match.
    Partial,
    /// It cannot match.
    No,
}

/// Whether `s[at..]` starts with `lit` (or is a prefix of it).
pub(super) fn lit(s: &str, at: usize, lit: &str) -> Match {
    let rest = s.as_bytes().get(at..).unwrap_or(&[]);
    let n = rest.len().min(lit.len());
    if rest[..n] != lit.as_bytes()[..n] {
        Match::No
    } else if n == lit.len() {
        Match::Full(at + n)
    } else {
        Match::Partial
    }
}

/// Where a marker opens in `s`: `Ok(Some(i))` for a whole occurrence, `Err(i)` when only a
/// prefix of it ends the text at `i`, `Ok(None)` when neither.
pub(super) fn find_marker(s: &str, marker: &str) -> Result<Option<usize>, usize> {
    if let Some(i) = s.find(marker) {
        return Ok(Some(i));
    }
    let b = s.as_bytes();
    let longest = marker.len().saturating_sub(1).min(b.len());
    for k in (1..=longest).rev() {
        if b[b.len() - k..] == marker.as_bytes()[..k] {
            return Err(b.len() - k);
        }
    }
    Ok(None)
}

/// Index of the first non-whitespace byte at or after `i`.
pub(super) fn skip_ws(s: &str, i: usize) -> usize {
    super::super::json::skip_ws(s.as_bytes(), i)
}

/// Whether `s[i..]`, after whitespace, starts with one of `next` or is empty.
pub(super) fn followed_by(s: &str, i: usize, next: &[&str]) -> bool {
    let j = skip_ws(s, i);
    j >= s.len() || next.iter().any(|n| s[j..].starts_with(n))
}

/// Reads `<tag name="VALUE"` + optional whitespace + `>` at `at`; returns (VALUE, end).
pub(super) fn named_tag<'a>(s: &'a str, at: usize, tag: &str) -> Option<(&'a str, usize)> {
    let Match::Full(i) = lit(s, at, tag) else {
        return None;
    };
    let j = skip_ws(s, i);
    if j == i {
        return None;
    }
    let Match::Full(q) = lit(s, j, "name=\"") else {
        return None;
    };
    let close = q + s[q..].find('"')?;
    let gt = skip_ws(s, close + 1);
    (s.as_bytes().get(gt) == Some(&b'>')).then_some((&s[q..close], gt + 1))
}

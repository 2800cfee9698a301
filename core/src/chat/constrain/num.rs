//! Number prefixes: grammar, and whether the bounds can still be met (see the module docs
//! of [`super`] for the rules).

use super::grammar::NUM_MAX;
use crate::chat::schema::ParamType;

/// Number bounds wholly beyond this magnitude are refused: plain decimals of
/// [`NUM_MAX`] bytes could not reach them comfortably.
pub(super) const REACH: f64 = 1e20;

/// A number prefix cut into its parts.
struct Shape<'t> {
    neg: bool,
    int: &'t [u8],
    frac: Option<&'t [u8]>,
}

impl Shape<'_> {
    /// Whether the text is a whole number as it stands.
    fn complete(&self) -> bool {
        !self.int.is_empty() && self.frac.is_none_or(|f| !f.is_empty())
    }
}

/// Cuts `t` as `-?(0|[1-9][0-9]*)(\.[0-9]*)?` (a fraction only when `real`), or `None`.
fn shape(t: &[u8], real: bool) -> Option<Shape<'_>> {
    let (neg, rest) = match t.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, t),
    };
    let (int, frac) = match rest.iter().position(|&c| c == b'.') {
        Some(d) => (&rest[..d], Some(&rest[d + 1..])),
        None => (rest, None),
    };
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    let ok = digits(int)
        && frac.is_none_or(digits)
        && !(int.len() > 1 && int[0] == b'0')
        && (frac.is_none() || (real && !int.is_empty()));
    ok.then_some(Shape { neg, int, frac })
}

/// Whether `t` is a complete number of type `ty`, within its bounds (parsed as the schema
/// check parses it).
pub(super) fn complete_ok(t: &[u8], ty: &ParamType<'_>) -> bool {
    let Ok(text) = core::str::from_utf8(t) else {
        return false;
    };
    let real = matches!(ty, ParamType::Number { .. });
    if !shape(t, real).is_some_and(|s| s.complete()) {
        return false;
    }
    match *ty {
        ParamType::Integer { min, max } => text
            .parse::<i64>()
            .is_ok_and(|x| min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)),
        ParamType::Number { min, max } => text.parse::<f64>().is_ok_and(|x| {
            x.is_finite() && min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)
        }),
        _ => false,
    }
}

/// Whether `t` is a prefix of some complete number of type `ty` within its bounds.
pub(super) fn prefix_ok(t: &[u8], ty: &ParamType<'_>) -> bool {
    if complete_ok(t, ty) {
        return true;
    }
    if t.len() >= NUM_MAX {
        return false;
    }
    match *ty {
        ParamType::Integer { min, max } => shape(t, false).is_some_and(|s| {
            let min = i128::from(min.unwrap_or(i64::MIN));
            let max = i128::from(max.unwrap_or(i64::MAX));
            int_reach(&s, min, max)
        }),
        ParamType::Number { min, max } => shape(t, true).is_some_and(|s| {
            let min = min.unwrap_or(f64::NEG_INFINITY);
            let max = max.unwrap_or(f64::INFINITY);
            real_reach(t, &s, NUM_MAX - t.len(), min, max)
        }),
        _ => false,
    }
}

/// Whether an integer prefix can be completed into `[min, max]` (exact).
fn int_reach(s: &Shape<'_>, min: i128, max: i128) -> bool {
    if s.int.is_empty() {
        // `-`: `-0`, or any negative number.
        return min <= 0;
    }
    if s.int == b"0" {
        return min <= 0 && 0 <= max;
    }
    if s.int.len() > 19 {
        return false; // beyond i64
    }
    let v = s
        .int
        .iter()
        .fold(0i128, |v, &d| v * 10 + i128::from(d - b'0'));
    // k more digits give magnitudes v·10^k ..= (v+1)·10^k − 1.
    let mut p: i128 = 1;
    while v * p <= i128::from(i64::MAX) + 1 {
        let (lo, hi) = (v * p, (v + 1) * p - 1);
        let (lo, hi) = if s.neg { (-hi, -lo) } else { (lo, hi) };
        if lo <= max && hi >= min {
            return true;
        }
        p *= 10;
    }
    false
}

/// Whether the decimal prefix `t` (cut as `s`) can be completed into `[min, max]`, with `room` bytes left
/// (by interval, in `f64`).
fn real_reach(t: &[u8], s: &Shape<'_>, room: usize, min: f64, max: f64) -> bool {
    // Can some magnitude in [a, b) (b open) be reached, given the sign?
    let hits = |a: f64, b: f64| {
        if s.neg {
            -a >= min && -b < max
        } else {
            a <= max && b > min
        }
    };
    let parse = |t: &[u8]| {
        core::str::from_utf8(t)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
    };
    // The digits and point, without sign or a trailing point.
    let magnitude = &t[usize::from(s.neg)..];
    let magnitude = magnitude.strip_suffix(b".").unwrap_or(magnitude);
    let Some(frac) = s.frac else {
        if s.int.is_empty() {
            return hits(0.0, f64::INFINITY);
        }
        if s.int == b"0" {
            return hits(0.0, 1.0);
        }
        let Some(v) = parse(s.int) else {
            return false;
        };
        let mut p = 1.0;
        for _ in 0..=room {
            if hits(v * p, (v + 1.0) * p) {
                return true;
            }
            p *= 10.0;
        }
        return false;
    };
    // x.f1…fk reaches [x, x + 10^-k); right after the point, [x, x + 1).
    let Some(x) = parse(magnitude) else {
        return false;
    };
    let step = frac.iter().fold(1.0, |p, _| p / 10.0);
    hits(x, x + step)
}

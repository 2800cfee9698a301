//! Checking and coercing a call's arguments against a schema.

use super::{ArgError, ArgErrorKind, ParamType, ToolSchema, Value};
use crate::chat::json::{self, Kind};
use crate::chat::toolcall::{Arg, CallArgs};
use crate::gguf::ErrName;

fn err(kind: ArgErrorKind, name: &str) -> ArgError {
    ArgError {
        kind,
        param: ErrName::new(name),
    }
}

impl<'a> ToolSchema<'a> {
    /// Checks `args` against the schema and fills `out[i]` with the coerced value of
    /// parameter `i` ([`Value::Absent`] when an optional one is not given).
    pub fn check<'v>(&self, args: &CallArgs<'v>, out: &mut [Value<'v>]) -> Result<(), ArgError> {
        self.check_args(args.params(), out)
    }

    /// Like [`check`](Self::check), over any sequence of arguments.
    pub fn check_args<'v>(
        &self,
        args: impl Iterator<Item = Arg<'v>>,
        out: &mut [Value<'v>],
    ) -> Result<(), ArgError> {
        if out.len() < self.params.len() {
            let name = self.params.get(out.len()).map_or("", |p| p.name);
            return Err(err(ArgErrorKind::NoRoom, name));
        }
        out.iter_mut().for_each(|v| *v = Value::Absent);
        for arg in args {
            let Some(i) = self.params.iter().position(|p| arg.key_is(p.name)) else {
                return Err(err(ArgErrorKind::Unknown, arg.key));
            };
            let p = &self.params[i];
            if out[i] != Value::Absent {
                return Err(err(ArgErrorKind::Duplicate, p.name));
            }
            out[i] = coerce(&p.ty, &arg).map_err(|k| err(k, p.name))?;
        }
        for (p, v) in self.params.iter().zip(out.iter()) {
            if p.required && *v == Value::Absent {
                return Err(err(ArgErrorKind::Missing, p.name));
            }
        }
        Ok(())
    }
}

/// Coerces one argument to `ty`.
fn coerce<'v>(ty: &ParamType<'_>, arg: &Arg<'v>) -> Result<Value<'v>, ArgErrorKind> {
    if !arg.json {
        return coerce_text(ty, arg.value);
    }
    let v = arg.value;
    match (ty, json::kind(v)) {
        (ParamType::String, Kind::String) => Ok(Value::JsonStr(&v[1..v.len() - 1])),
        (ParamType::Enum(opts), Kind::String) => {
            let raw = &v[1..v.len() - 1];
            let i = opts.iter().position(|o| json::str_eq(raw, o));
            i.map(Value::Enum).ok_or(ArgErrorKind::NotInEnum)
        }
        (ParamType::Boolean, Kind::Bool) => Ok(Value::Bool(v == "true")),
        (ParamType::Integer { .. } | ParamType::Number { .. }, Kind::Number) => coerce_text(ty, v),
        // A scalar quoted as a string: coerce its text, unless it needs unescaping.
        (_, Kind::String) if !v.contains('\\') => coerce_text(ty, &v[1..v.len() - 1]),
        _ => Err(ArgErrorKind::WrongType),
    }
}

/// Coerces verbatim text to `ty`.
fn coerce_text<'v>(ty: &ParamType<'_>, text: &'v str) -> Result<Value<'v>, ArgErrorKind> {
    let t = text.trim();
    match *ty {
        ParamType::String => Ok(Value::Str(text)),
        ParamType::Enum(opts) => {
            let i = opts.iter().position(|o| *o == t);
            i.map(Value::Enum).ok_or(ArgErrorKind::NotInEnum)
        }
        ParamType::Boolean if t.eq_ignore_ascii_case("true") => Ok(Value::Bool(true)),
        ParamType::Boolean if t.eq_ignore_ascii_case("false") => Ok(Value::Bool(false)),
        ParamType::Boolean => Err(ArgErrorKind::WrongType),
        ParamType::Integer { min, max } => {
            if !is_integer(t) {
                return Err(ArgErrorKind::WrongType);
            }
            let x: i64 = t.parse().map_err(|_| ArgErrorKind::OutOfRange)?;
            let ok = min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m);
            ok.then_some(Value::Int(x)).ok_or(ArgErrorKind::OutOfRange)
        }
        ParamType::Number { min, max } => {
            let x: f64 = is_decimal(t)
                .then(|| t.parse().ok())
                .flatten()
                .filter(|x: &f64| x.is_finite())
                .ok_or(ArgErrorKind::WrongType)?;
            let ok = min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m);
            ok.then_some(Value::Num(x)).ok_or(ArgErrorKind::OutOfRange)
        }
    }
}

/// `[+-]?[0-9]+`
fn is_integer(t: &str) -> bool {
    let d = t.strip_prefix(['+', '-']).unwrap_or(t);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
}

/// `[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?`
fn is_decimal(t: &str) -> bool {
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mant, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mant_ok = digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty());
    let exp_ok = exp.is_none_or(is_integer);
    mant_ok && exp_ok
}

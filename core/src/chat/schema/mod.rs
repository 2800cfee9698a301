//! Typed tool schemas: argument checking and coercion, and JSON rendering.
//!
//! A [`ToolSchema`] lists [`Param`]s with a [`ParamType`]. [`ToolSchema::check`] takes a
//! parsed call's arguments ([`super::toolcall::CallArgs`]), checks every one against the
//! schema and coerces it into a [`Value`], slot by slot in schema order:
//! - JSON arguments (Hermes) must have the JSON type; a JSON string holding a value of the
//!   declared scalar type is coerced like text.
//! - Text arguments (ATEM, Qwen) are coerced as the reference does: `string` is kept
//!   verbatim; `integer` is `[+-]?[0-9]+`; `number` is a finite decimal with optional
//!   exponent; `boolean` is `true`/`false` in any case; surrounding whitespace is ignored
//!   for all but strings.
//!
//! Unlike the reference, which keeps a value that fails coercion as a string, a failure is
//! an [`ArgError`] naming the parameter, so the daemon can refuse the call.
//! [`ToolSchema::write_args_json`] renders checked values as a JSON object, and
//! [`ToolSchema::write_parameters_json`] the schema itself.

mod check;
mod parse;
#[cfg(test)]
mod tests;

use core::fmt;

use super::{json, ChatError, Out};
use crate::gguf::ErrName;

pub use parse::SchemaError;

/// The type and limits of one parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamType<'a> {
    /// Any string.
    String,
    /// A whole number within the optional bounds (inclusive).
    Integer {
        /// Smallest allowed value.
        min: Option<i64>,
        /// Largest allowed value.
        max: Option<i64>,
    },
    /// A finite number within the optional bounds (inclusive).
    Number {
        /// Smallest allowed value.
        min: Option<f64>,
        /// Largest allowed value.
        max: Option<f64>,
    },
    /// `true` or `false`.
    Boolean,
    /// One of these strings.
    Enum(&'a [&'a str]),
}

/// One parameter of a tool.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Param<'a> {
    /// Parameter name.
    pub name: &'a str,
    /// What it means, for the model.
    pub description: &'a str,
    /// Type and limits.
    pub ty: ParamType<'a>,
    /// Whether a call must give it.
    pub required: bool,
}

impl Param<'_> {
    /// A placeholder for filling fixed arrays.
    pub const EMPTY: Param<'static> = Param {
        name: "",
        description: "",
        ty: ParamType::String,
        required: false,
    };
}

/// A tool's name, description and parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ToolSchema<'a> {
    /// Tool name.
    pub name: &'a str,
    /// What it does.
    pub description: &'a str,
    /// Its parameters.
    pub params: &'a [Param<'a>],
}

/// A checked, coerced argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// Not given (an optional parameter).
    Absent,
    /// A string, verbatim.
    Str(&'a str),
    /// A string as JSON string content, still escaped.
    JsonStr(&'a str),
    /// An integer.
    Int(i64),
    /// A number.
    Num(f64),
    /// A boolean.
    Bool(bool),
    /// The index of an enum option.
    Enum(usize),
}

/// What is wrong with an argument.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgErrorKind {
    /// The schema has no such parameter.
    Unknown,
    /// The parameter is given twice.
    Duplicate,
    /// A required parameter is missing.
    Missing,
    /// The value is not of the parameter's type.
    WrongType,
    /// The value is outside the parameter's bounds.
    OutOfRange,
    /// The value is not one of the enum's options.
    NotInEnum,
    /// The output slice is shorter than the parameter list.
    NoRoom,
}

/// A rejected argument: what is wrong, and which parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArgError {
    /// What is wrong.
    pub kind: ArgErrorKind,
    /// The parameter (as the call or the schema spelled it).
    pub param: ErrName,
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ArgErrorKind::Unknown => "unknown parameter",
            ArgErrorKind::Duplicate => "duplicate parameter",
            ArgErrorKind::Missing => "missing required parameter",
            ArgErrorKind::WrongType => "wrong type for parameter",
            ArgErrorKind::OutOfRange => "out of range: parameter",
            ArgErrorKind::NotInEnum => "not an allowed value: parameter",
            ArgErrorKind::NoRoom => "no room for parameter",
        };
        write!(f, "{what} `{}`", self.param)
    }
}

impl<'a> ToolSchema<'a> {
    /// Writes checked `values` (as filled by [`check`](Self::check)) as a compact JSON
    /// object in schema order, skipping absent ones.
    pub fn write_args_json(
        &self,
        values: &[Value<'_>],
        out: &mut Out<'_>,
    ) -> Result<(), ChatError> {
        out.push("{")?;
        let mut first = true;
        for (p, v) in self.params.iter().zip(values) {
            if *v == Value::Absent {
                continue;
            }
            out.push(if first { "" } else { "," })?;
            first = false;
            json::write_string(p.name, out)?;
            out.push(":")?;
            write_value(p, v, out)?;
        }
        out.push("}")
    }

    /// Writes the parameters as a JSON schema object (`{"type":"object",…}`).
    pub fn write_parameters_json(&self, out: &mut Out<'_>) -> Result<(), ChatError> {
        out.push("{\"type\":\"object\",\"properties\":{")?;
        for (i, p) in self.params.iter().enumerate() {
            out.push(if i == 0 { "" } else { "," })?;
            json::write_string(p.name, out)?;
            out.push(":{\"type\":")?;
            match p.ty {
                ParamType::String => out.push("\"string\"")?,
                ParamType::Boolean => out.push("\"boolean\"")?,
                ParamType::Integer { min, max } => {
                    out.push("\"integer\"")?;
                    write_bounds(min, max, out)?;
                }
                ParamType::Number { min, max } => {
                    out.push("\"number\"")?;
                    write_bounds(min, max, out)?;
                }
                ParamType::Enum(opts) => {
                    out.push("\"string\",\"enum\":[")?;
                    for (k, o) in opts.iter().enumerate() {
                        out.push(if k == 0 { "" } else { "," })?;
                        json::write_string(o, out)?;
                    }
                    out.push("]")?;
                }
            }
            if !p.description.is_empty() {
                out.push(",\"description\":")?;
                json::write_string(p.description, out)?;
            }
            out.push("}")?;
        }
        out.push("},\"required\":[")?;
        let required = self.params.iter().filter(|p| p.required);
        for (i, p) in required.enumerate() {
            out.push(if i == 0 { "" } else { "," })?;
            json::write_string(p.name, out)?;
        }
        out.push("]}")
    }
}

fn write_value(p: &Param<'_>, v: &Value<'_>, out: &mut Out<'_>) -> Result<(), ChatError> {
    use fmt::Write;
    let overflow = |_| ChatError::Overflow { needed: 1 };
    match *v {
        Value::Absent => out.push("null"),
        Value::Str(s) => json::write_string(s, out),
        Value::JsonStr(s) => out.push_all(&["\"", s, "\""]),
        Value::Int(i) => write!(out, "{i}").map_err(overflow),
        Value::Num(x) => write!(out, "{x:?}").map_err(overflow),
        Value::Bool(b) => out.push(if b { "true" } else { "false" }),
        Value::Enum(i) => match p.ty {
            ParamType::Enum(opts) => json::write_string(opts.get(i).copied().unwrap_or(""), out),
            _ => out.push("null"),
        },
    }
}

fn write_bounds<T: fmt::Debug>(
    min: Option<T>,
    max: Option<T>,
    out: &mut Out<'_>,
) -> Result<(), ChatError> {
    use fmt::Write;
    let overflow = |_| ChatError::Overflow { needed: 1 };
    if let Some(m) = min {
        write!(out, ",\"minimum\":{m:?}").map_err(overflow)?;
    }
    if let Some(m) = max {
        write!(out, ",\"maximum\":{m:?}").map_err(overflow)?;
    }
    Ok(())
}

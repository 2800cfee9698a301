//! Reading a [`ToolSchema`] from JSON-schema text (a client-registered tool).

use core::fmt;

use super::{Param, ParamType, ToolSchema};
use crate::chat::json::{self, JsonError, Kind};
use crate::gguf::ErrName;

/// Why a JSON schema could not be turned into a [`ToolSchema`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchemaError {
    /// The text is not valid JSON.
    Json(JsonError),
    /// The schema (or its `properties`) is not an object.
    NotAnObject,
    /// More parameters than the parameter buffer holds.
    TooManyParams,
    /// More enum options in total than the option buffer holds.
    TooManyOptions,
    /// A parameter's type is missing or not string/integer/number/boolean/enum.
    UnsupportedType {
        /// The parameter.
        param: ErrName,
    },
    /// A `minimum`/`maximum` is not a number of the parameter's type.
    BadBound {
        /// The parameter.
        param: ErrName,
    },
    /// A parameter name or enum option uses JSON escapes (unsupported).
    Escaped {
        /// The parameter.
        param: ErrName,
    },
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaError::Json(e) => write!(f, "invalid JSON: {e:?}"),
            SchemaError::NotAnObject => f.write_str("schema is not an object schema"),
            SchemaError::TooManyParams => f.write_str("too many parameters"),
            SchemaError::TooManyOptions => f.write_str("too many enum options"),
            SchemaError::UnsupportedType { param } => write!(f, "unsupported type for `{param}`"),
            SchemaError::BadBound { param } => write!(f, "bad minimum/maximum for `{param}`"),
            SchemaError::Escaped { param } => write!(f, "escaped name or option in `{param}`"),
        }
    }
}

impl<'a> ToolSchema<'a> {
    /// Reads the parameters of `schema_json` (`{"type":"object","properties":{…},
    /// "required":[…]}`) into `params`, with enum options in `options`.
    ///
    /// Descriptions that would need unescaping are dropped (left empty).
    pub fn from_json(
        name: &'a str,
        description: &'a str,
        schema_json: &'a str,
        params: &'a mut [Param<'a>],
        mut options: &'a mut [&'a str],
    ) -> Result<Self, SchemaError> {
        let schema = json::parse_value(schema_json).map_err(SchemaError::Json)?;
        if json::kind(schema) != Kind::Object {
            return Err(SchemaError::NotAnObject);
        }
        let props = json::get(schema, "properties").unwrap_or("{}");
        if json::kind(props) != Kind::Object {
            return Err(SchemaError::NotAnObject);
        }
        let required = json::get(schema, "required").filter(|r| json::kind(r) == Kind::Array);
        let mut n = 0;
        for (key, spec) in json::members(props) {
            let bad = |f: fn(ErrName) -> SchemaError| f(ErrName::new(key));
            if key.contains('\\') {
                return Err(bad(|param| SchemaError::Escaped { param }));
            }
            let slot = params.get_mut(n).ok_or(SchemaError::TooManyParams)?;
            n += 1;
            let ty = match param_type(spec, &mut options) {
                Ok(ty) => ty,
                Err(Bad::Type) => return Err(bad(|param| SchemaError::UnsupportedType { param })),
                Err(Bad::Bound) => return Err(bad(|param| SchemaError::BadBound { param })),
                Err(Bad::Escaped) => return Err(bad(|param| SchemaError::Escaped { param })),
                Err(Bad::Full) => return Err(SchemaError::TooManyOptions),
            };
            let desc = json::get(spec, "description").filter(|d| json::kind(d) == Kind::String);
            let desc = desc
                .map(|d| &d[1..d.len() - 1])
                .filter(|d| !d.contains('\\'));
            *slot = Param {
                name: key,
                description: desc.unwrap_or(""),
                ty,
                required: required
                    .is_some_and(|r| json::elements(r).any(|e| e.get(1..e.len() - 1) == Some(key))),
            };
        }
        let params: &'a [Param<'a>] = params;
        Ok(ToolSchema {
            name,
            description,
            params: &params[..n],
        })
    }
}

enum Bad {
    Type,
    Bound,
    Escaped,
    Full,
}

fn param_type<'a>(spec: &'a str, options: &mut &'a mut [&'a str]) -> Result<ParamType<'a>, Bad> {
    if json::kind(spec) != Kind::Object {
        return Err(Bad::Type);
    }
    if let Some(list) = json::get(spec, "enum") {
        if json::kind(list) != Kind::Array {
            return Err(Bad::Type);
        }
        let count = json::elements(list).count();
        if count > options.len() {
            return Err(Bad::Full);
        }
        let (mine, rest) = core::mem::take(options).split_at_mut(count);
        *options = rest;
        for (slot, e) in mine.iter_mut().zip(json::elements(list)) {
            if json::kind(e) != Kind::String {
                return Err(Bad::Type);
            }
            let raw = &e[1..e.len() - 1];
            if raw.contains('\\') {
                return Err(Bad::Escaped);
            }
            *slot = raw;
        }
        return Ok(ParamType::Enum(mine));
    }
    let ty = json::get(spec, "type").ok_or(Bad::Type)?;
    let bound = |key| json::get(spec, key).filter(|v| json::kind(v) != Kind::Null);
    let (min, max) = (bound("minimum"), bound("maximum"));
    match ty {
        "\"string\"" => Ok(ParamType::String),
        "\"boolean\"" => Ok(ParamType::Boolean),
        "\"integer\"" => {
            let int = |v: Option<&str>| {
                v.map(|v| v.parse::<i64>().map_err(|_| Bad::Bound))
                    .transpose()
            };
            Ok(ParamType::Integer {
                min: int(min)?,
                max: int(max)?,
            })
        }
        "\"number\"" => {
            let num = |v: Option<&str>| {
                v.map(|v| v.parse::<f64>().map_err(|_| Bad::Bound))
                    .transpose()
            };
            Ok(ParamType::Number {
                min: num(min)?,
                max: num(max)?,
            })
        }
        _ => Err(Bad::Type),
    }
}

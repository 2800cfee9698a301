//! Checking, coercion, and the JSON round trip of schemas.

use super::*;
use crate::chat::toolcall::CallArgs;

const UNITS: &[&str] = &["c", "f"];
const PARAMS: &[Param<'static>] = &[
    Param {
        name: "city",
        description: "City name",
        ty: ParamType::String,
        required: true,
    },
    Param {
        name: "days",
        description: "",
        ty: ParamType::Integer {
            min: Some(1),
            max: Some(14),
        },
        required: false,
    },
    Param {
        name: "units",
        description: "",
        ty: ParamType::Enum(UNITS),
        required: false,
    },
    Param {
        name: "verbose",
        description: "",
        ty: ParamType::Boolean,
        required: false,
    },
    Param {
        name: "lat",
        description: "",
        ty: ParamType::Number {
            min: Some(-90.0),
            max: Some(90.0),
        },
        required: false,
    },
];
const WEATHER: ToolSchema<'static> = ToolSchema {
    name: "weather",
    description: "Forecast",
    params: PARAMS,
};

fn atem(params: &[(&str, &str)]) -> Result<[Value<'static>; 5], ArgError> {
    extern crate std;
    let mut body = std::string::String::new();
    for (k, v) in params {
        body += &std::format!("<atem:parameter name=\"{k}\">{v}</atem:parameter>\n");
    }
    let body: &'static str = std::boxed::Box::leak(body.into_boxed_str());
    let mut out = [Value::Absent; 5];
    WEATHER.check(&CallArgs::Atem(body), &mut out)?;
    Ok(out)
}

fn args_json(values: &[Value<'_>]) -> heapless::String<256> {
    let mut buf = [0u8; 256];
    let mut out = Out::new(&mut buf);
    WEATHER.write_args_json(values, &mut out).unwrap();
    heapless::String::try_from(out.as_str()).unwrap()
}

#[test]
fn text_values_are_coerced_by_type() {
    let v = atem(&[
        ("city", " Oslo "),
        ("days", " +3\n"),
        ("units", "f"),
        ("verbose", "False"),
        ("lat", "59.9"),
    ])
    .unwrap();
    assert_eq!(
        v,
        [
            Value::Str(" Oslo "),
            Value::Int(3),
            Value::Enum(1),
            Value::Bool(false),
            Value::Num(59.9)
        ]
    );
    assert_eq!(
        args_json(&v),
        r#"{"city":" Oslo ","days":3,"units":"f","verbose":false,"lat":59.9}"#
    );
    let v = atem(&[("city", "a\"b"), ("lat", ".5e1")]).unwrap();
    assert_eq!(v[4], Value::Num(5.0));
    assert_eq!(args_json(&v), r#"{"city":"a\"b","lat":5.0}"#);
}

fn kind_of(params: &[(&str, &str)]) -> (ArgErrorKind, heapless::String<48>) {
    let e = atem(params).unwrap_err();
    (
        e.kind,
        heapless::String::try_from(e.param.as_str()).unwrap(),
    )
}

#[test]
fn bad_arguments_name_the_parameter() {
    use ArgErrorKind::*;
    type Case = (
        &'static [(&'static str, &'static str)],
        ArgErrorKind,
        &'static str,
    );
    let cases: &[Case] = &[
        (&[("days", "3")], Missing, "city"),
        (&[("city", "x"), ("town", "y")], Unknown, "town"),
        (&[("city", "x"), ("city", "y")], Duplicate, "city"),
        (&[("city", "x"), ("days", "10.0")], WrongType, "days"),
        (&[("city", "x"), ("days", "1_000")], WrongType, "days"),
        (&[("city", "x"), ("days", "15")], OutOfRange, "days"),
        (
            &[("city", "x"), ("days", "99999999999999999999")],
            OutOfRange,
            "days",
        ),
        (&[("city", "x"), ("verbose", "1")], WrongType, "verbose"),
        (&[("city", "x"), ("units", "kelvin")], NotInEnum, "units"),
        (&[("city", "x"), ("lat", "NaN")], WrongType, "lat"),
        (&[("city", "x"), ("lat", "1e999")], WrongType, "lat"),
        (&[("city", "x"), ("lat", "-90.5")], OutOfRange, "lat"),
        (&[("city", "x"), ("lat", ".")], WrongType, "lat"),
    ];
    for (params, kind, name) in cases {
        assert_eq!(
            kind_of(params),
            (*kind, heapless::String::try_from(*name).unwrap()),
            "{params:?}"
        );
    }
    let mut short = [Value::Absent; 2];
    let e = WEATHER.check(&CallArgs::Atem(""), &mut short).unwrap_err();
    assert_eq!((e.kind, e.param.as_str()), (NoRoom, "units"));
}

#[test]
fn json_values_are_typed_and_quoted_scalars_coerced() {
    let args = r#"{"city": "O\"slo", "days": "4", "units": "c", "verbose": true, "lat": -1e1}"#;
    let mut out = [Value::Absent; 5];
    WEATHER.check(&CallArgs::Json(args), &mut out).unwrap();
    assert_eq!(
        out,
        [
            Value::JsonStr("O\\\"slo"),
            Value::Int(4),
            Value::Enum(0),
            Value::Bool(true),
            Value::Num(-10.0)
        ]
    );
    assert_eq!(
        args_json(&out),
        r#"{"city":"O\"slo","days":4,"units":"c","verbose":true,"lat":-10.0}"#
    );
    for (bad, name) in [
        (r#"{"city": 5}"#, "city"),
        (r#"{"city": "x", "days": 2.5}"#, "days"),
        (r#"{"city": "x", "verbose": "yes"}"#, "verbose"),
        (r#"{"city": "x", "units": 1}"#, "units"),
        (r#"{"city": ["x"]}"#, "city"),
    ] {
        let e = WEATHER.check(&CallArgs::Json(bad), &mut out).unwrap_err();
        assert_eq!(
            (e.kind, e.param.as_str()),
            (ArgErrorKind::WrongType, name),
            "{bad}"
        );
    }
}

#[test]
fn schema_json_round_trips() {
    let mut buf = [0u8; 512];
    let mut out = Out::new(&mut buf);
    WEATHER.write_parameters_json(&mut out).unwrap();
    let text = out.as_str();
    assert!(text.starts_with(r#"{"type":"object","properties":{"city":{"type":"string","description":"City name"},"days":{"type":"integer","minimum":1,"maximum":14}"#), "{text}");
    assert!(text.ends_with(r#""required":["city"]}"#), "{text}");
    let mut params = [Param::EMPTY; 8];
    let mut options = [""; 4];
    let parsed =
        ToolSchema::from_json("weather", "Forecast", text, &mut params, &mut options).unwrap();
    assert_eq!(parsed, WEATHER);
}

#[test]
fn schema_json_errors() {
    let cases = [
        ("[]", SchemaError::NotAnObject),
        (
            "{",
            SchemaError::Json(crate::chat::json::JsonError::Eof { at: 1 }),
        ),
        (
            r#"{"properties":{"a":{"type":"array"}}}"#,
            SchemaError::UnsupportedType {
                param: ErrName::new("a"),
            },
        ),
        (
            r#"{"properties":{"a":{"type":"integer","minimum":0.5}}}"#,
            SchemaError::BadBound {
                param: ErrName::new("a"),
            },
        ),
        (
            r#"{"properties":{"a":{"enum":["x","y","z"]}}}"#,
            SchemaError::TooManyOptions,
        ),
        (
            r#"{"properties":{"a":{"type":"string"},"b":{"type":"string"}}}"#,
            SchemaError::TooManyParams,
        ),
        (
            r#"{"properties":{"a\"":{"type":"string"}}}"#,
            SchemaError::Escaped {
                param: ErrName::new("a\\\""),
            },
        ),
    ];
    for (text, want) in cases {
        let mut params = [Param::EMPTY; 1];
        let mut options = [""; 2];
        let got = ToolSchema::from_json("t", "", text, &mut params, &mut options);
        assert_eq!(got, Err(want), "{text}");
    }
}

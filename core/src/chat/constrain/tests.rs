//! What the constraint accepts and refuses, piece by piece.

extern crate std;

use std::string::String;
use std::vec::Vec;

use super::*;
use crate::chat::schema::Param;
use crate::sample::Rng;

pub(super) const UNITS: &[&str] = &["c", "f", "kelvin"];

const fn param(name: &'static str, ty: ParamType<'static>, required: bool) -> Param<'static> {
    Param {
        name,
        description: "",
        ty,
        required,
    }
}

const WEATHER: &[Param<'static>] = &[
    param("city", ParamType::String, true),
    param(
        "days",
        ParamType::Integer {
            min: Some(1),
            max: Some(14),
        },
        false,
    ),
    param("units", ParamType::Enum(UNITS), false),
    param("verbose", ParamType::Boolean, false),
    param(
        "lat",
        ParamType::Number {
            min: Some(-90.0),
            max: Some(90.0),
        },
        false,
    ),
];
const LED: &[Param<'static>] = &[
    param("on", ParamType::Boolean, true),
    param(
        "level",
        ParamType::Integer {
            min: Some(0),
            max: Some(255),
        },
        false,
    ),
];
const NUMS: &[Param<'static>] = &[
    param(
        "i",
        ParamType::Integer {
            min: Some(10),
            max: Some(20),
        },
        false,
    ),
    param(
        "n",
        ParamType::Integer {
            min: None,
            max: None,
        },
        false,
    ),
    param(
        "neg",
        ParamType::Integer {
            min: Some(-20),
            max: Some(-10),
        },
        false,
    ),
    param(
        "x",
        ParamType::Number {
            min: Some(0.5),
            max: Some(2.5),
        },
        false,
    ),
    param(
        "r",
        ParamType::Number {
            min: None,
            max: None,
        },
        false,
    ),
];

const fn tool(name: &'static str, params: &'static [Param<'static>]) -> ToolSchema<'static> {
    ToolSchema {
        name,
        description: "",
        params,
    }
}

/// Tools for the tests: `led` is a prefix of `led_strip`, `uptime` takes nothing.
pub(super) const TOOLS: &[ToolSchema<'static>] = &[
    tool("weather", WEATHER),
    tool("led", LED),
    tool("led_strip", LED),
    tool("uptime", &[]),
    tool("nums", NUMS),
];

pub(super) type Constraint = CallConstraint<'static, 4096>;

fn hermes() -> Constraint {
    CallConstraint::new(TOOLS, Dialect::Hermes).unwrap()
}

fn atem() -> Constraint {
    CallConstraint::new(TOOLS, Dialect::Atem).unwrap()
}

/// Pushes `prefix` (which must be allowed) and says whether `next` is allowed after it.
fn allowed_after(c: &Constraint, prefix: &str, next: &str) -> bool {
    let mut c = c.clone();
    c.reset();
    c.push(prefix)
        .unwrap_or_else(|e| panic!("{prefix:?} refused: {e:?}"));
    c.allows(next)
}

/// The Hermes call with `args` as the arguments object's inside.
fn call(name: &str, args: &str) -> String {
    std::format!("{{\"name\": \"{name}\", \"arguments\": {{{args}}}}}")
}

const HERMES_OK: &[&str] = &[
    "{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>",
    "\n{\"name\": \"weather\", \"arguments\": {\"city\": \"S\\u00e3o \\\"P\\\" \\\\ é\\n\", \"days\": 14, \
     \"units\": \"kelvin\", \"verbose\": false, \"lat\": -23.55}}\n</tool_call>",
    "{ \"name\" : \"led\" ,\r\n\t\"arguments\" : { \"level\" : 0 , \"on\" : true } } </tool_call>",
    "{\"name\":\"led_strip\",\"arguments\":{\"on\":false}}</tool_call>",
    "{\"name\": \"uptime\", \"arguments\": {}}</tool_call>",
    "{\"name\": \"nums\", \"arguments\": {\"i\": 10, \"n\": -9223372036854775808, \"neg\": -20, \
     \"x\": 2.5, \"r\": -0.000}}</tool_call>",
    "{\"name\": \"nums\", \"arguments\": {\"n\": 9223372036854775807, \"x\": 0.5, \"i\": 20, \
     \"r\": 0}}</tool_call>",
];

const ATEM_OK: &[&str] = &[
    "\n<atem:invoke name=\"weather\">\n<atem:parameter name=\"city\">São <Paulo> & \"x\"\n\
     </atem:parameter>\n<atem:parameter name=\"units\">f</atem:parameter>\n\
     <atem:parameter name=\"days\">3</atem:parameter>\n</atem:invoke>\n</atem:function_calls>",
    "<atem:invoke name=\"led\" ><atem:parameter name=\"on\">true</atem:parameter>\
     <atem:parameter name=\"level\">255</atem:parameter></atem:invoke></atem:function_calls>",
    "<atem:invoke name=\"uptime\"></atem:invoke></atem:function_calls>",
    "<atem:invoke name=\"weather\"><atem:parameter name=\"city\"></atem:parameter>\
     <atem:parameter name=\"lat\">-90.0</atem:parameter></atem:invoke></atem:function_calls>",
];

#[test]
fn every_prefix_of_a_valid_call_is_allowed() {
    for (c, calls) in [(hermes(), HERMES_OK), (atem(), ATEM_OK)] {
        for text in calls {
            for (i, _) in text.char_indices().skip(1) {
                assert!(c.allows(&text[..i]), "prefix {:?}", &text[..i]);
            }
            let mut c = c.clone();
            c.push(text).unwrap();
            assert!(c.is_complete(), "{text:?}");
            assert_eq!(c.text(), *text);
            assert!(!c.allows(" ") && !c.allows("x"), "nothing after the end");
        }
    }
}

#[test]
fn random_splits_are_allowed_at_every_piece() {
    let mut rng = Rng::new(5);
    for (c, calls) in [(hermes(), HERMES_OK), (atem(), ATEM_OK)] {
        for text in calls {
            let cuts: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
            for _ in 0..100 {
                let mut c = c.clone();
                let mut from = 0;
                for &cut in cuts.iter().chain([text.len()].iter()) {
                    if cut < text.len() && !rng.next_u64().is_multiple_of(3) {
                        continue;
                    }
                    let piece = &text[from..cut];
                    assert!(!c.is_complete());
                    assert!(c.allows(piece), "{piece:?} after {:?}", c.text());
                    c.push(piece).unwrap();
                    from = cut;
                }
                assert!(c.is_complete(), "{text:?}");
                assert_eq!(c.text(), *text);
            }
        }
    }
}

#[test]
fn tool_names_must_be_offered() {
    let c = hermes();
    assert!(c.allows("{\"name\": \"wea"));
    assert!(!c.allows("{\"name\": \"wex"));
    assert!(
        !c.allows("{\"name\": \"weath\""),
        "a prefix of a name is not a name"
    );
    assert!(!c.allows("{\"name\": \"weather2"));
    assert!(c.allows("{\"name\": \"led\""));
    assert!(c.allows("{\"name\": \"led_"));
    assert!(!c.allows("{\"name\": \"w\\u0065"), "no escapes in names");
    assert!(!c.allows("{\"nam\": "));
    assert!(!c.allows("{\"arguments\": "), "name first");
    assert!(!c.allows("[{"), "one call, not an array");
    let mut c = hermes();
    assert_eq!(c.tool(), None);
    c.push("{\"name\": \"led_strip\"").unwrap();
    assert_eq!(c.tool().map(|t| t.name), Some("led_strip"));
}

#[test]
fn keys_must_be_unseen_parameters() {
    let c = hermes();
    let head = call("weather", "");
    let head = &head[..head.len() - 2]; // `{"name": "weather", "arguments": {`
    assert!(allowed_after(&c, head, "\"ci"));
    assert!(!allowed_after(&c, head, "\"cty"), "unknown key");
    assert!(
        !allowed_after(&c, head, "\"cit\""),
        "key prefix is not a key"
    );
    assert!(!allowed_after(&c, head, "\"city\\"), "no escapes in keys");
    let one = std::format!("{head}\"city\": \"a\"");
    assert!(!allowed_after(&c, &one, ", \"c"), "duplicate key");
    assert!(allowed_after(&c, &one, ", \"days\": 2"));
    let all = std::format!(
        "{head}\"city\": \"a\", \"days\": 2, \"units\": \"c\", \"verbose\": true, \"lat\": 0"
    );
    assert!(!allowed_after(&c, &all, ","), "no parameter left");
    assert!(allowed_after(&c, &all, "}}</tool_call>"));
}

#[test]
fn required_parameters_come_before_the_close() {
    let c = hermes();
    assert!(!c.allows(&call("weather", "")));
    assert!(!c.allows(&call("weather", "\"days\": 3")));
    assert!(c.allows(&call("weather", "\"days\": 3, \"city\": \"x\"")));
    assert!(!c.allows(&call("led", "\"level\": 3")));
    assert!(c.allows(&call("uptime", "")));
    assert!(
        !c.allows("{\"name\": \"uptime\"}"),
        "arguments are always written"
    );
    let a = atem();
    assert!(!a.allows("<atem:invoke name=\"led\"></atem:invoke>"));
    assert!(!a.allows("<atem:invoke name=\"led\"></"));
    assert!(a.allows("<atem:invoke name=\"led\"><"));
    assert!(a.allows("<atem:invoke name=\"uptime\"></"));
    assert!(
        !a.allows("<atem:invoke name=\"uptime\"><atem:p"),
        "no parameter to give"
    );
}

#[test]
fn values_must_have_the_parameter_type() {
    let c = hermes();
    let w = |args: &str| {
        let s = call("weather", args);
        c.allows(&s[..s.len() - 2]) // without the closing braces
    };
    assert!(w("\"days\": 3"));
    assert!(!w("\"days\": \""), "string for an integer");
    assert!(!w("\"days\": 3."), "no fraction for an integer");
    assert!(!w("\"days\": tr"));
    assert!(!w("\"lat\": \"1"), "string for a number");
    assert!(w("\"units\": \"kel"));
    assert!(!w("\"units\": \"x"), "enum miss");
    assert!(!w("\"units\": \"k\""), "enum prefix is not an option");
    assert!(!w("\"units\": c"), "enum needs quotes");
    assert!(w("\"verbose\": tru"));
    assert!(!w("\"verbose\": trux"));
    assert!(!w("\"verbose\": \"true\""));
    assert!(!w("\"verbose\": True"));
    assert!(!w("\"city\": 3"), "number for a string");
    assert!(!w("\"city\": null"));
}

#[test]
fn strings_follow_json() {
    let c = hermes();
    let head = call("weather", "\"city\": ");
    let head = &head[..head.len() - 2];
    let ok = |s: &str| allowed_after(&c, head, s);
    assert!(ok("\"a\\\"b\\\\c\\/\\b\\f\\n\\r\\t\\u00E9 é 🦀\""));
    assert!(ok("\"\\u00"));
    assert!(!ok("\"\\x"), "bad escape");
    assert!(!ok("\"\\u00g"), "bad hex");
    assert!(!ok("\"a\nb"), "raw control character");
    assert!(!ok("\"a\"\""), "after the string");
    assert!(ok("\"\""));
    assert!(ok("\"</tool_call"), "only the whole tag is refused");
    assert!(
        !ok("\"a</tool_call>"),
        "the parser would end the block here"
    );
    assert!(!ok("\"<</tool_call>"));
    assert!(ok("\"<\\/tool_call>\""), "escaped, it is fine");
}

#[test]
fn integer_bounds_on_prefixes() {
    let c = hermes();
    let head = call("nums", "");
    let head = &head[..head.len() - 2];
    let ok = |key: &str, v: &str| allowed_after(&c, head, &std::format!("\"{key}\": {v}"));
    // i in 10..=20
    assert!(ok("i", "1"));
    assert!(!ok("i", "3"), "3 and 30.. both miss");
    assert!(ok("i", "2"));
    assert!(ok("i", "20"));
    assert!(!ok("i", "21"));
    assert!(!ok("i", "200"));
    assert!(!ok("i", "1}"), "1 is below the minimum once it ends");
    assert!(!ok("i", "1,"));
    assert!(ok("i", "15}"));
    assert!(!ok("i", "-"), "no negative reaches 10");
    assert!(!ok("i", "0"));
    // n: any i64
    assert!(ok("n", "9223372036854775807}"));
    assert!(!ok("n", "9223372036854775808"));
    assert!(!ok("n", "92233720368547758070"));
    assert!(ok("n", "-9223372036854775808}"));
    assert!(!ok("n", "-9223372036854775809"));
    assert!(ok("n", "-0}"));
    assert!(!ok("n", "01"), "no leading zero");
    assert!(!ok("n", "+1"));
    assert!(!ok("n", "-}"));
    // neg in -20..=-10
    assert!(ok("neg", "-"));
    assert!(ok("neg", "-1"));
    assert!(ok("neg", "-2"));
    assert!(!ok("neg", "-3"));
    assert!(!ok("neg", "-21"));
    assert!(!ok("neg", "-1}"));
    assert!(!ok("neg", "5"));
}

#[test]
fn number_bounds_on_prefixes() {
    let c = hermes();
    let head = call("nums", "");
    let head = &head[..head.len() - 2];
    let ok = |key: &str, v: &str| allowed_after(&c, head, &std::format!("\"{key}\": {v}"));
    // x in 0.5..=2.5
    assert!(ok("x", "0"));
    assert!(ok("x", "0."));
    assert!(!ok("x", "0.4"), "0.4… never reaches 0.5");
    assert!(ok("x", "0.5}"));
    assert!(ok("x", "2.5}"));
    assert!(ok("x", "2.50000}"));
    assert!(!ok("x", "2.500001"));
    assert!(!ok("x", "2.6"));
    assert!(!ok("x", "3"));
    assert!(!ok("x", "-"));
    assert!(!ok("x", "0}"), "0 is below the minimum once it ends");
    assert!(!ok("x", "1.}"), "a point needs a digit");
    assert!(ok("x", "1}"));
    // r: any number, plain notation only
    assert!(ok("r", "-12.75}"));
    assert!(!ok("r", "1e"), "no exponent");
    assert!(!ok("r", "1E5"));
    assert!(!ok("r", ".5"));
    assert!(!ok("r", "1.2.3"));
    assert!(!ok("r", "00"));
    let long = "1".repeat(NUM_MAX);
    assert!(ok("r", &long));
    assert!(!ok("r", &std::format!("{long}1")), "longer than NUM_MAX");
    assert!(ok("r", &std::format!("{long}}}")));
    // lat in -90..=90
    let w = call("weather", "\"city\": \"x\", \"lat\": ");
    let w = &w[..w.len() - 2];
    assert!(allowed_after(&c, w, "-90.0}"));
    assert!(allowed_after(&c, w, "-9"));
    assert!(!allowed_after(&c, w, "-90.1"));
    assert!(!allowed_after(&c, w, "-91"));
    assert!(!allowed_after(&c, w, "100"));
}

#[test]
fn atem_values() {
    let a = atem();
    let head = "<atem:invoke name=\"weather\"><atem:parameter name=\"";
    let ok = |s: &str| allowed_after(&a, head, s);
    assert!(ok("city\">a < b > c <<x"));
    assert!(!ok("city\">a </b"), "no `</` in a value");
    assert!(ok("city\">a</atem:parameter>"));
    assert!(!ok("city\">a</atem:parameter><atem:parameter name=\"city"));
    assert!(!ok("cty"));
    assert!(ok("units\">kelvin</atem:parameter>"));
    assert!(!ok("units\">k</"), "enum prefix is not an option");
    assert!(!ok("units\">\"c\""), "raw options, no quotes");
    assert!(!ok("days\"> 3"), "no whitespace around numbers");
    assert!(!ok("days\">3 "));
    assert!(!ok("days\">15"));
    assert!(ok("days\">14</atem:parameter>"));
    assert!(!ok("verbose\">True"));
    assert!(!ok("lat\">1.</"));
}

#[test]
fn whitespace_runs_are_capped() {
    let c = hermes();
    let run = " ".repeat(MAX_WS as usize);
    assert!(c.allows(&std::format!("{run}{{")));
    assert!(!c.allows(&std::format!("{run} ")));
    assert!(c.allows(&std::format!("{{{run}\"name\"{run}:{run}\"led\"")));
    // Whitespace inside strings is content, not counted.
    let s = call("weather", &std::format!("\"city\": \"{run}{run}\""));
    assert!(c.allows(&s));
}

#[test]
fn push_takes_nothing_on_error() {
    let mut c = hermes();
    c.push("{\"name\": \"led\"").unwrap();
    assert_eq!(c.push("x"), Err(ConstrainError::Rejected));
    assert_eq!(c.push(""), Err(ConstrainError::Rejected));
    assert!(!c.allows(""), "an empty piece makes no progress");
    assert_eq!(c.text(), "{\"name\": \"led\"");
    c.push(", ").unwrap();
    let mut small: CallConstraint<'_, 8> = CallConstraint::new(TOOLS, Dialect::Hermes).unwrap();
    small.push("{\"name\"").unwrap();
    assert_eq!(
        small.push(": \""),
        Err(ConstrainError::Overflow { needed: 2 })
    );
    assert_eq!(small.text(), "{\"name\"");
    assert!(small.allows(": \""), "allows looks at the grammar only");
    small.reset();
    assert_eq!(small.text(), "");
    assert!(small.allows("{"));
}

#[test]
fn schemas_that_cannot_be_met_are_refused() {
    let new = |tools: &'static [ToolSchema<'static>], d| {
        CallConstraint::<'static, 64>::new(tools, d).map(|_| ())
    };
    assert_eq!(
        new(TOOLS, Dialect::QwenXml),
        Err(ConstrainError::UnsupportedDialect)
    );
    assert_eq!(new(&[], Dialect::Hermes), Err(ConstrainError::NoTools));
    let is = |r: Result<(), ConstrainError>, want: fn(&ConstrainError) -> bool| {
        assert!(r.as_ref().is_err_and(want), "{r:?}");
    };
    const QUOTE: &[ToolSchema<'static>] = &[tool("a\"b", &[])];
    is(new(QUOTE, Dialect::Hermes), |e| {
        matches!(e, ConstrainError::BadName { .. })
    });
    const EMPTY_ENUM: &[Param<'static>] = &[param("u", ParamType::Enum(&[]), false)];
    const E1: &[ToolSchema<'static>] = &[tool("t", EMPTY_ENUM)];
    is(new(E1, Dialect::Hermes), |e| {
        matches!(e, ConstrainError::Unsatisfiable { .. })
    });
    const BACKWARDS: &[Param<'static>] = &[param(
        "k",
        ParamType::Integer {
            min: Some(3),
            max: Some(2),
        },
        false,
    )];
    const E2: &[ToolSchema<'static>] = &[tool("t", BACKWARDS)];
    is(new(E2, Dialect::Hermes), |e| {
        matches!(e, ConstrainError::Unsatisfiable { .. })
    });
    const NAN: &[Param<'static>] = &[param(
        "k",
        ParamType::Number {
            min: Some(f64::NAN),
            max: None,
        },
        false,
    )];
    const E3: &[ToolSchema<'static>] = &[tool("t", NAN)];
    is(new(E3, Dialect::Hermes), |e| {
        matches!(e, ConstrainError::Unsatisfiable { .. })
    });
    const TWICE: &[Param<'static>] = &[
        param("k", ParamType::String, false),
        param("k", ParamType::Boolean, false),
    ];
    const E4: &[ToolSchema<'static>] = &[tool("t", TWICE)];
    is(new(E4, Dialect::Hermes), |e| {
        matches!(e, ConstrainError::DuplicateParam { .. })
    });
    const SPACED: &[&str] = &[" a"];
    const SP: &[Param<'static>] = &[param("k", ParamType::Enum(SPACED), false)];
    const E5: &[ToolSchema<'static>] = &[tool("t", SP)];
    assert_eq!(new(E5, Dialect::Hermes), Ok(()));
    is(new(E5, Dialect::Atem), |e| {
        matches!(e, ConstrainError::BadName { .. })
    });
}

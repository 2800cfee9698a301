//! Parser behaviour, and the same events for every way of splitting the input.

extern crate std;

use std::string::{String, ToString};
use std::vec::Vec;
use std::{format, vec};

use super::*;
use crate::chat::ChatError;

const TOOLS: &[&str] = &["led", "uptime", "weather", "get_weather", "add"];

#[derive(Debug, PartialEq)]
enum Ev {
    Text(String),
    Call(String, Vec<(String, String, bool)>),
    Bad(MalformedCall),
}

fn drain<T: ToolSet + ?Sized>(p: &mut CallParser<'_, '_, T>, out: &mut Vec<Ev>) {
    while let Some(e) = p.next_event() {
        match e {
            ToolEvent::Text(t) => match out.last_mut() {
                Some(Ev::Text(prev)) => prev.push_str(t),
                _ => out.push(Ev::Text(t.to_string())),
            },
            ToolEvent::Call(c) => {
                let args = c.args.params();
                let args = args.map(|a| (a.key.to_string(), a.value.to_string(), a.json));
                out.push(Ev::Call(c.name.to_string(), args.collect()));
            }
            ToolEvent::Malformed(m) => out.push(Ev::Bad(m)),
        }
    }
}

fn run(d: Dialect, pieces: &[&str]) -> Vec<Ev> {
    let mut buf = [0u8; 1024];
    let mut p = CallParser::new(d, TOOLS, &mut buf);
    let mut out = Vec::new();
    for piece in pieces {
        p.push(piece).unwrap();
        drain(&mut p, &mut out);
    }
    p.finish();
    drain(&mut p, &mut out);
    assert_eq!(p.buffered(), 0);
    out
}

/// Parses `input` whole, split at every char boundary, and one char at a time, and checks
/// all give `want`.
fn check(d: Dialect, input: &str, want: &[Ev]) {
    assert_eq!(run(d, &[input]), want, "whole input");
    for (k, _) in input.char_indices().skip(1) {
        assert_eq!(run(d, &[&input[..k], &input[k..]]), want, "split at {k}");
    }
    let chars: Vec<String> = input.chars().map(|c| c.to_string()).collect();
    let pieces: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(run(d, &pieces), want, "char by char");
}

fn text(s: &str) -> Ev {
    Ev::Text(s.to_string())
}

fn call(name: &str, args: &[(&str, &str)], json: bool) -> Ev {
    let args = args
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string(), json));
    Ev::Call(name.to_string(), args.collect())
}

#[test]
fn hermes_call_between_text() {
    let input = "Sure. <tool_call>\n{\"name\": \"led\", \"arguments\": {\"on\": true}}\n</tool_call> Done ✓";
    check(
        Dialect::Hermes,
        input,
        &[
            text("Sure. "),
            call("led", &[("on", "true")], true),
            text(" Done ✓"),
        ],
    );
}

#[test]
fn hermes_array_and_missing_arguments() {
    let input =
        r#"<tool_call>[{"name":"led","arguments":{"on":false}},{"name":"uptime"}]</tool_call>"#;
    check(
        Dialect::Hermes,
        input,
        &[
            call("led", &[("on", "false")], true),
            call("uptime", &[], true),
        ],
    );
}

#[test]
fn hermes_undefined_tool_is_text() {
    let input = r#"A<tool_call>{"name":"nuke","arguments":{}}</tool_call>B"#;
    check(Dialect::Hermes, input, &[text(input)]);
    let mixed = r#"<tool_call>[{"name":"led"},{"name":"nuke"}]</tool_call>"#;
    check(Dialect::Hermes, mixed, &[text(mixed)]);
}

#[test]
fn hermes_malformed_keeps_the_leading_text() {
    let input = r#"Lead <tool_call>{"name": "led", "arguments": {oops}}</tool_call> tail"#;
    let bad = MalformedCall::Json(json::JsonError::Unexpected { at: 30 });
    check(
        Dialect::Hermes,
        input,
        &[text("Lead "), Ev::Bad(bad), text(" tail")],
    );
    let no_name = r#"<tool_call>{"arguments": {}}</tool_call>"#;
    check(
        Dialect::Hermes,
        no_name,
        &[Ev::Bad(MalformedCall::MissingName)],
    );
    let str_args = r#"<tool_call>{"name":"led","arguments":"{}"}</tool_call>"#;
    check(
        Dialect::Hermes,
        str_args,
        &[Ev::Bad(MalformedCall::BadArguments)],
    );
    check(
        Dialect::Hermes,
        "<tool_call>[1]</tool_call>",
        &[Ev::Bad(MalformedCall::NotACall)],
    );
}

#[test]
fn hermes_end_of_stream() {
    let cut = r#"Lead <tool_call>{"name": "led""#;
    check(
        Dialect::Hermes,
        cut,
        &[text("Lead "), Ev::Bad(MalformedCall::Truncated)],
    );
    let unclosed = r#"<tool_call>{"name":"led","arguments":{}}"#;
    check(Dialect::Hermes, unclosed, &[call("led", &[], true)]);
    check(Dialect::Hermes, "a <tool_", &[text("a <tool_")]);
    check(
        Dialect::Hermes,
        "x < y <tool_cal> z",
        &[text("x < y <tool_cal> z")],
    );
}

#[test]
fn partial_tag_is_held_back_until_decided() {
    let mut buf = [0u8; 64];
    let mut p = CallParser::new(Dialect::Hermes, TOOLS, &mut buf);
    p.push("a <tool_").unwrap();
    assert_eq!(p.next_event(), Some(ToolEvent::Text("a ")));
    assert_eq!(p.next_event(), None);
    assert_eq!(p.buffered(), 6);
    p.push("box>").unwrap();
    assert_eq!(p.next_event(), Some(ToolEvent::Text("<tool_box>")));
    assert_eq!(p.next_event(), None);
}

#[test]
fn qwen_call() {
    let input = "Let me check.\n<tool_call>\n<function=weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
    let want = [
        text("Let me check.\n"),
        call("weather", &[("city", "Oslo"), ("days", "3")], false),
    ];
    check(Dialect::QwenXml, input, &want);
    let multi_line =
        "<tool_call><function=add><parameter=a>\n\nx\ny\n\n</parameter></function></tool_call>";
    check(
        Dialect::QwenXml,
        multi_line,
        &[call("add", &[("a", "\nx\ny\n")], false)],
    );
}

#[test]
fn qwen_undefined_and_malformed() {
    let undefined = "<tool_call>\n<function=nuke>\n</function>\n</tool_call>";
    check(Dialect::QwenXml, undefined, &[text(undefined)]);
    let no_end = "ok <tool_call>\n<function=add>\n<parameter=a>\n1\n</parameter>\n</tool_call>";
    check(
        Dialect::QwenXml,
        no_end,
        &[text("ok "), Ev::Bad(MalformedCall::BadMarkup { at: 15 })],
    );
    let json_body = r#"<tool_call>{"name":"add"}</tool_call>"#;
    check(
        Dialect::QwenXml,
        json_body,
        &[Ev::Bad(MalformedCall::BadMarkup { at: 0 })],
    );
    let cut = "<tool_call>\n<function=add>\n<parameter=a>\n1";
    check(Dialect::QwenXml, cut, &[Ev::Bad(MalformedCall::Truncated)]);
}

fn atem(name: &str, params: &[(&str, &str)]) -> String {
    let mut s = format!("<atem:function_calls>\n<atem:invoke name=\"{name}\">\n");
    for (k, v) in params {
        s += &format!("<atem:parameter name=\"{k}\">{v}</atem:parameter>\n");
    }
    s + "</atem:invoke>\n</atem:function_calls>"
}

#[test]
fn atem_call_with_header() {
    let input = format!(
        " to=get_weather<|message|>{}<|eom|>",
        atem("get_weather", &[("city", "Paris")])
    );
    check(
        Dialect::Atem,
        &input,
        &[
            call("get_weather", &[("city", "Paris")], false),
            text("<|eom|>"),
        ],
    );
    let constrained = format!(
        "<|start|>assistant to=add constrain=json<|message|>{}",
        atem("add", &[("a", "1"), ("b", "2")])
    );
    check(
        Dialect::Atem,
        &constrained,
        &[call("add", &[("a", "1"), ("b", "2")], false)],
    );
    let bare = atem("add", &[]);
    check(Dialect::Atem, &bare, &[call("add", &[], false)]);
}

#[test]
fn atem_prose_reasoning_and_several_calls() {
    let input = format!(
        "Checking now. to=add<|message|>{}<|start|>assistant to=self<|message|>Hm.<|eom|><|start|>assistant to=add<|message|>{}",
        atem("add", &[("a", "5")]),
        atem("add", &[("a", "6")])
    );
    let want = [
        text("Checking now."),
        call("add", &[("a", "5")], false),
        text("<|start|>assistant to=self<|message|>Hm.<|eom|>"),
        call("add", &[("a", "6")], false),
    ];
    check(Dialect::Atem, &input, &want);
    let two = "<atem:function_calls>\n<atem:invoke name=\"add\">\n<atem:parameter name=\"a\">1</atem:parameter>\n</atem:invoke>\n<atem:invoke name=\"uptime\">\n</atem:invoke>\n</atem:function_calls>";
    check(
        Dialect::Atem,
        two,
        &[
            call("add", &[("a", "1")], false),
            call("uptime", &[], false),
        ],
    );
    let goto = "Use goto=label; set auto=true. x to=y";
    check(Dialect::Atem, goto, &[text(goto)]);
}

#[test]
fn atem_values_are_verbatim() {
    for v in [
        "  hi  ",
        "a </atem:parameter> b",
        "x = <atem:invoke name=\"foo\">",
        "a < b && c > d",
        "",
    ] {
        let input = atem("get_weather", &[("city", v), ("units", "C")]);
        check(
            Dialect::Atem,
            &input,
            &[call("get_weather", &[("city", v), ("units", "C")], false)],
        );
    }
}

#[test]
fn atem_degrades_like_the_reference() {
    let undefined = format!(
        " to=delete_everything<|message|>{}<|eom|>",
        atem("delete_everything", &[("t", "all")])
    );
    check(Dialect::Atem, &undefined, &[text(&undefined)]);
    let cut = "Sure! <atem:function_calls>\n<atem:invoke name=\"get_weather\">\n<atem:parameter name=\"city\">Paris";
    check(
        Dialect::Atem,
        cut,
        &[text("Sure! "), Ev::Bad(MalformedCall::Truncated)],
    );
    let unclosed = "<atem:function_calls>\n<atem:invoke name=\"add\">\n</atem:invoke>\n";
    check(Dialect::Atem, unclosed, &[call("add", &[], false)]);
    let empty = "<atem:function_calls>\n</atem:function_calls>";
    check(Dialect::Atem, empty, &[Ev::Bad(MalformedCall::Empty)]);
    let broken =
        "<atem:function_calls><atem:invoke nam=\"add\"></atem:invoke></atem:function_calls>t";
    check(
        Dialect::Atem,
        broken,
        &[Ev::Bad(MalformedCall::BadMarkup { at: 0 }), text("t")],
    );
}

#[test]
fn small_buffer_streams_long_text_and_rejects_long_calls() {
    let mut buf = [0u8; 32];
    let mut p = CallParser::new(Dialect::Hermes, TOOLS, &mut buf);
    let mut out = Vec::new();
    let long = "lorem ipsum dolor ".repeat(60);
    for chunk in long.as_bytes().chunks(8) {
        p.push(core::str::from_utf8(chunk).unwrap()).unwrap();
        drain(&mut p, &mut out);
    }
    assert_eq!(out, vec![text(&long)]);
    p.push("<tool_call>{\"name\":").unwrap();
    drain(&mut p, &mut out);
    assert_eq!(
        p.push("\"led\",\"arguments\":{}}"),
        Err(ChatError::Overflow { needed: 8 })
    );
    p.reset();
    assert_eq!(p.buffered(), 0);
}

/// Random mixes of markup fragments: never a panic, and any split gives the same events.
#[test]
fn random_markup_is_split_invariant() {
    const BITS: &[&str] = &[
        "<tool_call>",
        "</tool_call>",
        "{",
        "}",
        "[",
        "]",
        "\"name\"",
        ":",
        "\"led\"",
        ",",
        "\"arguments\"",
        "<function=",
        ">",
        "<parameter=",
        "</parameter>",
        "</function>",
        "<atem:function_calls>",
        "</atem:function_calls>",
        "<atem:invoke name=\"add\">",
        "</atem:invoke>",
        "<atem:parameter name=\"a\">",
        "</atem:parameter>",
        " to=add<|message|>",
        "<|start|>assistant",
        "x",
        " ",
        "\n",
        "é",
        "<",
        "t",
        "to=",
    ];
    let mut rng = crate::sample::Rng::new(7);
    for _ in 0..1500 {
        let mut input = String::new();
        for _ in 0..rng.next_u64() % 24 {
            input.push_str(BITS[rng.next_u64() as usize % BITS.len()]);
        }
        for d in [Dialect::Hermes, Dialect::QwenXml, Dialect::Atem] {
            let whole = run(d, &[&input]);
            let cuts: Vec<usize> = input.char_indices().map(|(i, _)| i).collect();
            let k = cuts
                .get(rng.next_u64() as usize % cuts.len().max(1))
                .copied()
                .unwrap_or(0);
            assert_eq!(
                run(d, &[&input[..k], &input[k..]]),
                whole,
                "{d:?} {input:?} at {k}"
            );
            let joined: String = whole
                .iter()
                .filter_map(|e| match e {
                    Ev::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            assert!(joined.len() <= input.len());
        }
    }
}

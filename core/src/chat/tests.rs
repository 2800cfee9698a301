//! Template renderings that the Jinja fixtures do not cover: Glimmer, OpenAI Harmony and
//! the tool conventions; and rendered calls parse back with the template's dialect.

extern crate std;

use super::chatml::ChatMl;
use super::harmony::OpenAiHarmony;
use super::toolcall::{CallParser, ToolEvent};
use super::*;

fn render(
    t: Template<'_>,
    msgs: &[Message<'_>],
    tools: &[ToolDef<'_>],
    gen: bool,
) -> std::string::String {
    let mut buf = [0u8; 4096];
    let mut out = Out::new(&mut buf);
    t.render(msgs, tools, gen, &mut out).unwrap();
    out.as_str().into()
}

const LED: ToolDef<'static> = ToolDef {
    name: "led",
    description: "Switch the \"status\" LED.",
    parameters: r#"{ "type": "object", "properties": { "on": { "type": "boolean" } } }"#,
};
const CALLS: &[ToolCall<'static>] = &[
    ToolCall {
        id: "1",
        name: "led",
        arguments: r#"{"on": true, "note": "a \"b\"\n"}"#,
    },
    ToolCall {
        id: "2",
        name: "led",
        arguments: "{}",
    },
];

#[test]
fn glimmer_matches_the_documented_prompts() {
    let msgs = [
        Message::system("You are a helpful AI assistant."),
        Message::user("Hi."),
        Message::assistant("Hello."),
        Message::user("And again?"),
    ];
    assert_eq!(
        render(Template::Glimmer, &msgs, &[], true),
        "<|start|>system<|message|>You are a helpful AI assistant.<|eot|><|start|>user<|message|>Hi.<|eot|><|start|>assistant<|message|>Hello.<|eot|><|start|>user<|message|>And again?<|eot|><|start|>assistant"
    );
    let thought = Message {
        reasoning: Some("Thinking."),
        ..Message::assistant("Answer.")
    };
    assert_eq!(
        render(Template::Glimmer, &[thought], &[], false),
        "<|start|>assistant to=self<|message|>Thinking.<|eom|><|start|>assistant<|message|>Answer.<|eot|>"
    );
}

#[test]
fn glimmer_tools_calls_and_results() {
    let msgs = [
        Message::user("Light?"),
        Message::assistant_calls("", &CALLS[..1]),
        Message::tool("1", "led", "ok"),
    ];
    let got = render(Template::Glimmer, &msgs, &[LED], true);
    let want = concat!(
        "<|start|>system<|message|># Tools\n\nYou can call these tools:\n",
        r#"{"name": "led", "description": "Switch the \"status\" LED.", "parameters": {"type":"object","properties":{"on":{"type":"boolean"}}}}"#,
        "\n\nTo call a tool, send a message to=TOOL_NAME whose body is:\n<atem:function_calls>\n",
        "<atem:invoke name=\"TOOL_NAME\">\n<atem:parameter name=\"PARAMETER\">VALUE</atem:parameter>\n",
        "</atem:invoke>\n</atem:function_calls><|eot|>",
        "<|start|>user<|message|>Light?<|eot|>",
        "<|start|>assistant to=led<|message|><atem:function_calls>\n<atem:invoke name=\"led\">\n",
        "<atem:parameter name=\"on\">true</atem:parameter>\n",
        "<atem:parameter name=\"note\">a \"b\"\n</atem:parameter>\n",
        "</atem:invoke>\n</atem:function_calls><|eom|>",
        "<|start|>tool name=led<|message|>ok<|eot|><|start|>assistant",
    );
    assert_eq!(got, want);
    let with_text = [Message::assistant_calls("Sure.", &CALLS[1..])];
    assert_eq!(
        render(Template::Glimmer, &with_text, &[], false),
        "<|start|>assistant<|message|>Sure.<|eom|><|start|>assistant to=led<|message|><atem:function_calls>\n<atem:invoke name=\"led\">\n</atem:invoke>\n</atem:function_calls><|eom|>"
    );
}

#[test]
fn chatml_hermes_tools() {
    let msgs = [
        Message::user("Light?"),
        Message::assistant_calls("Sure.", CALLS),
        Message::tool("1", "led", "ok"),
        Message::tool("2", "led", "done"),
    ];
    let got = render(Template::ChatMl(ChatMl::SMOLLM2), &msgs, &[LED], true);
    let want = std::format!(
        "<|im_start|>system\n{}\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call><|im_end|>\n{}",
        chatml::SMOLLM2_DEFAULT_SYSTEM,
        r#"{"type": "function", "function": {"name": "led", "description": "Switch the \"status\" LED.", "parameters": {"type":"object","properties":{"on":{"type":"boolean"}}}}}"#,
        concat!(
            "<|im_start|>user\nLight?<|im_end|>\n",
            "<|im_start|>assistant\nSure.\n<tool_call>\n",
            r#"{"name": "led", "arguments": {"on":true,"note":"a \"b\"\n"}}"#,
            "\n</tool_call>\n<tool_call>\n",
            r#"{"name": "led", "arguments": {}}"#,
            "\n</tool_call><|im_end|>\n",
            "<|im_start|>user\n<tool_response>\nok\n</tool_response>\n<tool_response>\ndone\n</tool_response><|im_end|>\n",
            "<|im_start|>assistant\n",
        )
    );
    assert_eq!(got, want);
    let plain = ChatMl {
        default_system: None,
    };
    assert_eq!(
        render(Template::ChatMl(plain), &[Message::user("x")], &[], false),
        "<|im_start|>user\nx<|im_end|>\n"
    );
}

#[test]
fn gemma_tools_fold_into_the_first_turn() {
    let msgs = [
        Message::system("Sys."),
        Message::user(" Light? "),
        Message::assistant_calls("", &CALLS[1..]),
        Message::tool("2", "led", " ok "),
    ];
    let got = render(Template::Gemma, &msgs, &[LED], true);
    assert!(
        got.starts_with("<start_of_turn>user\nSys.\n\n# Tools\n\n"),
        "{got}"
    );
    assert!(got.ends_with(concat!(
        "</tool_call>\n\nLight?<end_of_turn>\n",
        "<start_of_turn>model\n<tool_call>\n{\"name\": \"led\", \"arguments\": {}}\n</tool_call><end_of_turn>\n",
        "<start_of_turn>user\n<tool_response>\nok\n</tool_response><end_of_turn>\n",
        "<start_of_turn>model\n",
    )), "{got}");
}

#[test]
fn openai_harmony() {
    let thought = Message {
        reasoning: Some("Think."),
        ..Message::assistant_calls("", &CALLS[1..])
    };
    let msgs = [
        Message::system("Be brief."),
        Message::user("Light?"),
        thought,
        Message::tool("2", "led", "ok"),
    ];
    let got = render(
        Template::OpenAiHarmony(OpenAiHarmony::default()),
        &msgs,
        &[LED],
        true,
    );
    let want = concat!(
        "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n\nReasoning: medium\n\n",
        "# Valid channels: analysis, commentary, final. Channel must be included for every message.\n",
        "Calls to these tools must go to the commentary channel: 'functions'.<|end|>",
        "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools\n\n## functions\n\nnamespace functions {\n\n",
        "// Switch the \"status\" LED.\ntype led = (_: {\"type\":\"object\",\"properties\":{\"on\":{\"type\":\"boolean\"}}}) => any;\n\n",
        "} // namespace functions<|end|>",
        "<|start|>user<|message|>Light?<|end|>",
        "<|start|>assistant<|channel|>analysis<|message|>Think.<|end|>",
        "<|start|>assistant<|channel|>commentary to=functions.led <|constrain|>json<|message|>{}<|call|>",
        "<|start|>functions.led to=assistant<|channel|>commentary<|message|>ok<|end|>",
        "<|start|>assistant",
    );
    assert_eq!(got, want);
}

#[test]
fn errors_are_typed() {
    let bad = [ToolCall {
        id: "1",
        name: "led",
        arguments: "[1]",
    }];
    let msgs = [Message::assistant_calls("", &bad)];
    for t in [
        Template::Glimmer,
        Template::Gemma,
        Template::ChatMl(ChatMl::SMOLLM2),
    ] {
        let mut buf = [0u8; 512];
        let mut out = Out::new(&mut buf);
        assert_eq!(
            t.render(&msgs, &[], false, &mut out),
            Err(ChatError::BadToolArgs)
        );
    }
    let mut buf = [0u8; 10];
    let mut out = Out::new(&mut buf);
    let r = Template::Glimmer.render(&[Message::user("Hello")], &[], true, &mut out);
    assert!(matches!(r, Err(ChatError::Overflow { .. })));
}

/// A call rendered into the history parses back, with the template's own dialect, to the
/// same tool and arguments.
#[test]
fn rendered_calls_parse_back() {
    for t in [
        Template::Glimmer,
        Template::ChatMl(ChatMl {
            default_system: None,
        }),
        Template::Gemma,
    ] {
        let msgs = [Message::assistant_calls("", &CALLS[..1])];
        let text = render(t, &msgs, &[], false);
        let mut buf = [0u8; 1024];
        let tools: &[&str] = &["led"];
        let mut p = CallParser::new(t.tool_dialect().unwrap(), tools, &mut buf);
        p.push(&text).unwrap();
        p.finish();
        let mut calls = 0;
        while let Some(ev) = p.next_event() {
            if let ToolEvent::Call(c) = ev {
                calls += 1;
                assert_eq!(c.name, "led");
                let args: std::vec::Vec<_> = c.args.params().collect();
                assert_eq!(args.len(), 2, "{t:?}");
                assert!(args[0].key_is("on") && args[1].key_is("note"));
                let note = args[1].value;
                assert!(note == "a \"b\"\n" || note == r#""a \"b\"\n""#, "{note}");
            }
        }
        assert_eq!(calls, 1, "{t:?}: {text}");
    }
}

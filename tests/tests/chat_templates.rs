//! Chat templates must render exactly what the models' Jinja templates render.
//!
//! `scripts/gen_chat_fixtures.py` renders each conversation with SmolLM2's template (read
//! from its GGUF) and Gemma 3's, into `tests/fixtures/chat/*.json`; here glimmer-core
//! renders the same conversations into a fixed buffer and must match byte for byte.

use glimmer_core::chat::chatml::ChatMl;
use glimmer_core::chat::{Message, Out, Template};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    template_source: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    messages: Vec<Msg>,
    add_generation_prompt: bool,
    expected: String,
}

#[derive(Deserialize)]
struct Msg {
    role: String,
    content: String,
}

fn check(file: &str, template: Template<'_>) {
    let path = glimmer_tests::fixtures_dir().join("chat").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let fixture: Fixture = serde_json::from_str(&text).unwrap();
    assert!(!fixture.cases.is_empty());
    for case in &fixture.cases {
        let messages: Vec<Message<'_>> = case
            .messages
            .iter()
            .map(|m| match m.role.as_str() {
                "system" => Message::system(&m.content),
                "user" => Message::user(&m.content),
                "assistant" => Message::assistant(&m.content),
                other => panic!("role {other}"),
            })
            .collect();
        let mut buf = vec![0u8; 4096];
        let mut out = Out::new(&mut buf);
        template
            .render(&messages, &[], case.add_generation_prompt, &mut out)
            .unwrap();
        assert_eq!(
            out.as_str(),
            case.expected,
            "{file} case {} ({})",
            case.name,
            fixture.template_source
        );
        // One byte short must fail with a typed overflow, not panic or truncate silently.
        let need = case.expected.len();
        if need > 0 {
            let mut small = vec![0u8; need - 1];
            let mut out = Out::new(&mut small);
            let r = template.render(&messages, &[], case.add_generation_prompt, &mut out);
            assert!(r.is_err(), "{} fits in {} bytes", case.name, need - 1);
        }
    }
}

#[test]
fn smollm2_matches_its_jinja_template() {
    check("smollm2.json", Template::ChatMl(ChatMl::SMOLLM2));
}

#[test]
fn gemma3_matches_its_jinja_template() {
    check("gemma3.json", Template::Gemma);
}

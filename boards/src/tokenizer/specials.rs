//! Special-token roles llama.cpp derives from token texts, and the list of tokens that are
//! matched verbatim in input text.

use super::table::{Attr, Table};

/// Texts that make a token the end-of-turn token when the file names none.
const EOT_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<end_of_utterance>",
];

/// Texts that make a token the end-of-message token when the file names none.
const EOM_TEXTS: &[&str] = &["<|eom_id|>"];

/// Fill-in-the-middle roles detected by text: prefix, suffix, middle, pad, repo, file
/// separator. The last three also end generation.
const FIM_TEXTS: [&[&str]; 6] = [
    &[
        "<|fim_prefix|>",
        "<fim-prefix>",
        "<fim_prefix>",
        "<PRE>",
        "<|code_prefix|>",
        "<|prefix|>",
    ],
    &[
        "<|fim_suffix|>",
        "<fim-suffix>",
        "<fim_suffix>",
        "<SUF>",
        "<|code_suffix|>",
        "<|suffix|>",
    ],
    &[
        "<|fim_middle|>",
        "<fim-middle>",
        "<fim_middle>",
        "<MID>",
        "<|code_middle|>",
        "<|middle|>",
    ],
    &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"],
    &[
        "<|fim_repo|>",
        "<|repo_name|>",
        "<fim-repo>",
        "<REPO>",
        "<reponame>",
    ],
    &["<|file_sep|>"],
];

/// Texts that end generation.
const EOG_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
];

/// Texts llama.cpp always treats as user-defined (rendered, matched even without
/// `parse_special`).
const FORCED_USER_DEFINED: &[&str] = &["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"];

/// Roles found by [`detect`].
#[derive(Debug)]
pub(crate) struct Specials {
    /// End-of-turn token.
    pub(crate) eot: Option<u32>,
    /// End-of-message token.
    pub(crate) eom: Option<u32>,
    /// Tokens that end generation, sorted.
    pub(crate) eog: Vec<u32>,
    /// Tokens matched verbatim in text (control, user-defined, unknown), longest text first.
    pub(crate) partition: Vec<u32>,
}

/// The lowest id among tokens whose text is in `texts`; marks it control.
fn find_role(table: &mut Table, texts: &[&str]) -> Option<u32> {
    let id = texts.iter().filter_map(|t| table.id(t)).min()?;
    table.add_attr(id, Attr::CONTROL);
    Some(id)
}

/// Derives the roles llama.cpp infers from texts, adjusting attributes as it does.
pub(crate) fn detect(
    table: &mut Table,
    eos: Option<u32>,
    eot: Option<u32>,
    eom: Option<u32>,
) -> Specials {
    let eot = eot.or_else(|| find_role(table, EOT_TEXTS));
    let eom = eom.or_else(|| find_role(table, EOM_TEXTS));
    let mut eog = Vec::new();
    for (role, texts) in FIM_TEXTS.iter().enumerate() {
        let id = find_role(table, texts);
        if role >= 3 {
            eog.extend(id);
        }
    }
    for text in EOG_TEXTS {
        if let Some(id) = table.id(text) {
            eog.push(id);
            table.add_attr(id, Attr::CONTROL);
        }
    }
    for text in FORCED_USER_DEFINED {
        if let Some(id) = table.id(text) {
            table.set_attr(id, Attr::USER_DEFINED);
        }
    }
    eog.extend(eos);
    eog.extend(eot);
    eog.extend(eom);
    eog.sort_unstable();
    eog.dedup();

    let has =
        |eog: &[u32], t: &Table, text: &str| t.id(text).filter(|id| eog.binary_search(id).is_ok());
    // Harmony-style vocabularies: `<|end|>` separates messages but does not end generation.
    if let Some(end) = has(&eog, table, "<|end|>") {
        let call = has(&eog, table, "<|call|>")
            .or(has(&eog, table, "<|calls|>"))
            .is_some();
        let ret = has(&eog, table, "<|return|>").is_some();
        let flush = has(&eog, table, "<|flush|>").is_some();
        if call && (ret || flush) {
            eog.retain(|&id| id != end);
            table.set_attr(end, Attr::USER_DEFINED);
        }
    }
    // Vocabularies with `<|tool_response>` use `</s>` as text.
    if let Some(s) = has(&eog, table, "</s>") {
        if has(&eog, table, "<|tool_response>").is_some() {
            eog.retain(|&id| id != s);
            table.set_attr(s, Attr::NORMAL);
        }
    }

    let matched = Attr::CONTROL.with(Attr::USER_DEFINED).with(Attr::UNKNOWN);
    let mut partition: Vec<u32> = (0..table.len())
        .filter_map(|i| u32::try_from(i).ok())
        .filter(|&id| table.attr(id).any(matched))
        .collect();
    partition.sort_by_key(|&id| core::cmp::Reverse(table.text(id).map_or(0, str::len)));
    Specials {
        eot,
        eom,
        eog,
        partition,
    }
}

//! Reading a [`Vocab`] from the `tokenizer.ggml.*` keys of a GGUF file.

use glimmer_core::gguf::{ArrayView, Gguf};

use super::error::{SpecialToken, TokenizerError};
use super::vocab::Vocab;

/// The vocabulary stored in `g`, with llama.cpp's per-model defaults for absent keys.
pub fn vocab_from_gguf(g: &Gguf<'_>) -> Result<Vocab, TokenizerError> {
    let bad = |key: &'static str| move |_| TokenizerError::BadKey { key };
    let str_key = |key: &'static str| g.get_str(key).map_err(bad(key));
    let array = |key: &'static str| g.get_array(key).map_err(bad(key));

    let model = str_key("tokenizer.ggml.model")?.ok_or(TokenizerError::MissingKey {
        key: "tokenizer.ggml.model",
    })?;
    let pre = str_key("tokenizer.ggml.pre")?.unwrap_or("default");
    let tokens = array("tokenizer.ggml.tokens")?.ok_or(TokenizerError::MissingKey {
        key: "tokenizer.ggml.tokens",
    })?;
    let mut v = Vocab::new(model, pre, strings(tokens, "tokenizer.ggml.tokens")?);
    if let Some(a) = array("tokenizer.ggml.merges")? {
        v.merges = strings(a, "tokenizer.ggml.merges")?;
    }
    if let Some(a) = array("tokenizer.ggml.scores")? {
        let key = "tokenizer.ggml.scores";
        v.scores = (0..a.len())
            .map(|i| a.f32_at(i).ok_or(TokenizerError::BadKey { key }))
            .collect::<Result<_, _>>()?;
    }
    if let Some(a) = array("tokenizer.ggml.token_type")? {
        let key = "tokenizer.ggml.token_type";
        v.types = (0..a.len())
            .map(|i| a.i32_at(i).ok_or(TokenizerError::BadKey { key }))
            .collect::<Result<_, _>>()?;
    }
    let ids: [(&'static str, SpecialToken, &mut Option<u32>); 6] = [
        ("tokenizer.ggml.bos_token_id", SpecialToken::Bos, &mut v.bos),
        ("tokenizer.ggml.eos_token_id", SpecialToken::Eos, &mut v.eos),
        ("tokenizer.ggml.eot_token_id", SpecialToken::Eot, &mut v.eot),
        ("tokenizer.ggml.eom_token_id", SpecialToken::Eom, &mut v.eom),
        (
            "tokenizer.ggml.unknown_token_id",
            SpecialToken::Unk,
            &mut v.unk,
        ),
        (
            "tokenizer.ggml.padding_token_id",
            SpecialToken::Pad,
            &mut v.pad,
        ),
    ];
    let n = v.tokens.len();
    for (key, which, slot) in ids {
        if let Some(id) = g.get_u64(key).map_err(bad(key))? {
            let out_of_range = TokenizerError::SpecialOutOfRange {
                which,
                id,
                vocab_size: n,
            };
            *slot = Some(u32::try_from(id).map_err(|_| out_of_range)?);
        }
    }
    let flags: [(&'static str, &mut bool); 3] = [
        ("tokenizer.ggml.add_bos_token", &mut v.add_bos),
        ("tokenizer.ggml.add_eos_token", &mut v.add_eos),
        ("tokenizer.ggml.add_space_prefix", &mut v.add_space_prefix),
    ];
    for (key, slot) in flags {
        if let Some(b) = g.get_bool(key).map_err(bad(key))? {
            *slot = b;
        }
    }
    v.check()?;
    Ok(v)
}

/// The strings of a string array; any other element type is [`TokenizerError::BadKey`].
fn strings(a: ArrayView<'_>, key: &'static str) -> Result<Vec<String>, TokenizerError> {
    let out: Vec<String> = a.strs().map(str::to_owned).collect();
    if out.len() != a.len() {
        return Err(TokenizerError::BadKey { key });
    }
    Ok(out)
}

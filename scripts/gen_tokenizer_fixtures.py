#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizer/{smollm2,gemma3}.json: token ids from llama.cpp.

Each file holds the llama-cpp-python version, the model file name and a list of cases
{text, add_special, parse_special, ids, decoded}, one per text and flag combination. The ids
come from llama.cpp's own tokenizer (`Llama(vocab_only=True).tokenize`); `decoded` is
llama.cpp's detokenization of those ids (`llama_detokenize` with remove_special=true,
unparse_special=false) as a string, or `decoded_hex` when it is not valid UTF-8. The Rust
test `tests/tests/tokenizer_llamacpp.rs` checks that glimmer does exactly the same.

Usage: scripts/gen_tokenizer_fixtures.py [--models DIR] [--smollm2 PATH] [--gemma3 PATH]
Run it with the reference venv (scripts/setup-reference.sh), e.g.
    ~/.cache/glimmer/refvenv/bin/python scripts/gen_tokenizer_fixtures.py
Models are found in --models, else $GLIMMER_MODELS, else ~/.cache/glimmer/models.
"""

import argparse
import json
import os
import sys
from pathlib import Path

MODELS = {
    "smollm2": "smollm2-135m-instruct-q4_1.gguf",
    "gemma3": "gemma-3-270m-q4_k_m.gguf",
}

# Texts that exercise the pre-tokenizers, merges, byte fallback and special tokens.
TEXTS = [
    "",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    "\n\n\n",
    " \n",
    "\r\n",
    "\t\n \t\n",
    "   \n   \n",
    "Hello",
    " Hello",
    "Hello world",
    "Hello  world",
    "Hello   world",
    "hello world ",
    "  leading spaces",
    "trailing spaces  ",
    "multiple     spaces     here",
    "tabs\tand\t\ttabs",
    "The quick brown fox jumps over the lazy dog.",
    "12345",
    "1 2 3",
    " 1",
    "3.14159",
    "2024-01-01",
    "100,000",
    "a1b2c3",
    "٣٤٥ ١٢٣",
    "½ ⅓ ¾ x² y³ ①②",
    "don't",
    "I'm, we'll, they've, she'd, it's",
    "DON'T I'M",
    "'s 're 've",
    "emoji 😀🎉👍🏽",
    "family 👨‍👩‍👧",
    "日本語のテキスト",
    "中文测试，标点。",
    "한국어 텍스트",
    "café naïve résumé",
    "Ünïcödé",
    "Ελληνικά",
    "русский текст",
    "عربي",
    "हिन्दी",
    "∑∫√ ≤ ≥ ≠",
    "ＡＢＣ fullwidth",
    "ﬁ ligature",
    "combining e\u0301",
    "\u00a0nbsp and\u3000ideographic space",
    "zero\u200bwidth",
    "control\u0001chars\u007f",
    "\u2581already escaped ▁▁",
    "next\u0085line\u2028sep\u1680ogham\x0bvt\x0cff\rcr",
    ">\x16'S and \x04\x06 controls",
    "astral \U0005b6ea \U00010348 \U0001f9ea",
    "fn main() {\n    println!(\"hi\");\n}\n",
    "def f(x):\n\treturn x**2\n",
    "!!!???...",
    "$100 #tag @user",
    "http://example.com/a?b=c&d=e",
    "C:\\path\\file.txt",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n",
    "<|im_start|><|im_start|>",
    "<|im_start",
    "a<|im_end|>b",
    "<|endoftext|>",
    "<repo_name>x<file_sep>y",
    "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
    "<bos>hi",
    "</s>",
    "<s>",
    "<unk>",
    "<pad>",
    "<mask>",
    "<unused0>",
    "<start_of_image>",
    "<table><tr><td>x</td></tr></table>",
    "<b>bold</b> and <i>it</i>",
    "<h1>Title</h1>\n\n<p>Para</p>",
    "x  y   z    w",
    "line\n\n\n\nbreaks\n\n",
    "\t\tindented\n\t\t\tmore",
    (
        "Tokenizers split text into pieces. In 2023, roughly 1,234 people asked: "
        "\"Why?\" The answer — as always — depends; see §4.2 (p. 17) & the appendix. "
        "Prices: €5, £3, ¥700. E-mail: someone@example.org.\n\n"
        "    Indented code: let x = vec![1, 2, 3];\n"
        "Mixed 日本 text with émojis 🚀 and numbers 42."
    ),
]


def model_path(args, name):
    override = getattr(args, name)
    if override:
        return Path(override)
    base = args.models or os.environ.get("GLIMMER_MODELS") or Path.home() / ".cache/glimmer/models"
    return Path(base) / MODELS[name]


def detokenize(llama_cpp, vocab, ids):
    """llama.cpp's detokenization of `ids` with special tokens removed, as bytes."""
    import ctypes

    arr = (llama_cpp.llama_token * max(len(ids), 1))(*ids)
    size = 64 + 16 * len(ids)
    while True:
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, size, True, False)
        if n >= 0:
            return buf.raw[:n]
        size = -n


def dump(doc):
    """JSON with one case per line."""
    head = {k: v for k, v in doc.items() if k != "cases"}
    lines = [json.dumps(c, ensure_ascii=False) for c in doc["cases"]]
    body = json.dumps(head, ensure_ascii=False, indent=1)[:-2]
    return body + ',\n "cases": [\n' + ",\n".join(lines) + "\n ]\n}\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="directory holding the model files")
    ap.add_argument("--smollm2", help="path of the SmolLM2 GGUF")
    ap.add_argument("--gemma3", help="path of the Gemma 3 GGUF")
    ap.add_argument("--out", default=Path(__file__).resolve().parent.parent / "tests/fixtures/tokenizer")
    args = ap.parse_args()

    import llama_cpp
    from llama_cpp import Llama

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in MODELS:
        path = model_path(args, name)
        if not path.exists():
            sys.exit(f"missing model file {path}")
        llm = Llama(model_path=str(path), vocab_only=True, verbose=False)
        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        cases = []
        for text in TEXTS:
            for add_special in (False, True):
                for parse_special in (False, True):
                    ids = llm.tokenize(text.encode("utf-8"), add_bos=add_special, special=parse_special)
                    case = {"text": text, "add_special": add_special, "parse_special": parse_special, "ids": ids}
                    back = detokenize(llama_cpp, vocab, ids)
                    try:
                        case["decoded"] = back.decode("utf-8")
                    except UnicodeDecodeError:
                        case["decoded_hex"] = back.hex()
                    cases.append(case)
        doc = {
            "generator": "scripts/gen_tokenizer_fixtures.py",
            "llama_cpp_python": llama_cpp.__version__,
            "model_file": MODELS[name],
            "cases": cases,
        }
        dest = out_dir / f"{name}.json"
        dest.write_text(dump(doc), encoding="utf-8")
        print(f"{dest}: {len(cases)} cases")


if __name__ == "__main__":
    main()

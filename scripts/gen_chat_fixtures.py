#!/usr/bin/env python3
"""Render known conversations with the models' own Jinja chat templates.

Writes tests/fixtures/chat/{smollm2,gemma3}.json; tests/tests/chat_templates.rs renders the
same conversations with glimmer_core::chat and compares byte for byte.

- SmolLM2: `tokenizer.chat_template` from the GGUF (GLIMMER_MODELS or
  ~/.cache/glimmer/models/smollm2-135m-instruct-q4_1.gguf).
- Gemma 3: the GGUF we test with (gemma-3-270m, a base model) carries no chat template, so
  the template below is Gemma 3 instruct's (the string-content path of the template shipped
  with google/gemma-3-*-it); a GGUF that does carry one is preferred.

The BOS token is rendered as "" (the tokenizer adds it). Needs `pip install jinja2 gguf`.
"""

import json
import os
import sys

import jinja2
from gguf import GGUFReader

GEMMA3_IT_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else "") }}
    {{- message['content'] | trim }}
    {{- '<end_of_turn>\\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\\n'}}
{%- endif -%}
"""


def models_dir():
    d = os.environ.get("GLIMMER_MODELS")
    return d if d else os.path.expanduser("~/.cache/glimmer/models")


def gguf_template(name):
    path = os.path.join(models_dir(), name)
    if not os.path.exists(path):
        return None, path
    field = GGUFReader(path).fields.get("tokenizer.chat_template")
    if field is None:
        return None, path
    return bytes(field.parts[field.data[0]]).decode("utf-8"), path


def S(c):
    return {"role": "system", "content": c}


def U(c):
    return {"role": "user", "content": c}


def A(c):
    return {"role": "assistant", "content": c}


# (name, messages, add_generation_prompt, templates it applies to)
CASES = [
    ("single_user", [U("Hi.")], True, "both"),
    ("system_and_user", [S("You are a lamp."), U("Turn on.")], True, "both"),
    ("multi_turn", [S("Be brief."), U("Hi."), A("Hello."), U("And again?")], True, "both"),
    ("no_generation_prompt", [U("Hi."), A("Hello.")], False, "both"),
    ("whitespace_and_unicode", [S(" sys \n"), U("  héllo ✓ \n\n"), A("\tok "), U("x")], True, "both"),
    ("empty_system", [S(""), U("Hi.")], True, "both"),
    ("multiline", [U("line 1\nline 2\n\nline 4"), A("a\nb")], True, "both"),
    ("only_system", [S("Alone.")], True, "both"),
    ("late_system", [U("Hi."), A("Hello."), S("Now be terse."), U("Ok?")], True, "smollm2"),
]


def render(template, messages, add_generation_prompt):
    env = jinja2.Environment()

    def raise_exception(msg):
        raise jinja2.TemplateError(msg)

    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(
        messages=messages, add_generation_prompt=add_generation_prompt, bos_token=""
    )


def write(out_dir, key, template, source):
    cases = []
    for name, messages, gen, which in CASES:
        if which not in ("both", key):
            continue
        cases.append({
            "name": name,
            "messages": messages,
            "add_generation_prompt": gen,
            "expected": render(template, messages, gen),
        })
    path = os.path.join(out_dir, key + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"template_source": source, "cases": cases}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote %s (%d cases)" % (path, len(cases)))


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = os.path.join(root, "tests", "fixtures", "chat")
    os.makedirs(out_dir, exist_ok=True)
    smol, path = gguf_template("smollm2-135m-instruct-q4_1.gguf")
    if smol is None:
        sys.exit("no chat template in %s" % path)
    write(out_dir, "smollm2", smol, "tokenizer.chat_template of smollm2-135m-instruct-q4_1.gguf")
    gemma, path = gguf_template("gemma-3-270m-q4_k_m.gguf")
    source = "tokenizer.chat_template of gemma-3-270m-q4_k_m.gguf"
    if gemma is None:
        gemma, source = GEMMA3_IT_TEMPLATE, "Gemma 3 instruct template (string content path)"
    write(out_dir, "gemma3", gemma, source)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes tests/data/chat/jinja.json: what `jinja2`, set up as HF transformers renders chat
templates (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, the loopcontrols
extension, transformers' tojson, raise_exception and strftime_now), makes of

- published chat templates, run by Whittle's Jinja (runtime/model/jinja.h):
  DeepSeek-R1-Distill's, Phi-4-mini's (as llama.cpp keeps it) and
  Mistral-Small-3.1's, kept in tests/data/chat/ as published, for the conversations of
  make_chat_fixtures.py;
- small templates, one or a few features each (SNIPPETS), for one conversation, and the
  ones jinja2 refuses or raises on (expected "error": the kind, "syntax" or "render").

tests/unit/test_jinja.cpp renders each with Whittle's Jinja and requires the same text, or
a failure where jinja2 fails (reading or running the template: Whittle refuses some
templates when reading them that jinja2 reads and fails to run, as `include`). A list of {"template" (a file name) or "source" (the text),
"messages", "add_generation_prompt", "bos_token", "eos_token", "today", "expected" or
"error"}.

    pip install jinja2
    python3 tests/reference/make_jinja_fixtures.py
"""
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_chat_fixtures import (CONVERSATIONS, OUT_DIR, Generation, TemplateError, raise_exception,  # noqa: E402
                                transformers_tojson)

REAL = {  # template file: (bos_token, eos_token)
    "deepseek-r1-distill": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "phi4-mini": ("<|endoftext|>", "<|endoftext|>"),
    "mistral-small-3.1": ("<s>", "</s>"),
}
TODAY = "06 Dec 2026"  # what strftime_now formats, in every format a template asks for
NOW = datetime.datetime.strptime(TODAY, "%d %b %Y")

MESSAGES = [
    {"role": "system", "content": "  Be brief.\n"},
    {"role": "user", "content": "Hi, 'you' \"there\"! ünï 😀"},
    {"role": "assistant", "content": "<think>hmm</think>Hello"},
    {"role": "user", "content": "a b  c\td"},
]

SNIPPETS = [
    # output, literals and whitespace control
    "{{ 'a' }}{{ \"b\" }}{{ 'c' 'd' }}", "x {{- ' y ' -}} z", "{{ 1 }} {{ 1.5 }} {{ -2 }} {{ 1e3 }} {{ 10 / 4 }}",
    "{{ true }} {{ none }} {{ True }} {{ [1, 'a', none, true] }} {{ {'k': 'v', 'n': 1} }} {{ (1, 2) }}",
    "{{ 'a\\tb\\\\c\\'d\\x41\\u00e9\\101' }}", "{{ 'it''s' if false else \"it's\" }}", "{{ [\"'\", '\"'] }}",
    "  {% if true %}\n  yes\n  {% endif %}\nend\n", "{%+ if true %} kept {% endif +%}\nnext",
    "a {#- comment -#} b {# another #}\nc", "line\n{% if true -%}\n   x\n{%- endif %}\n",
    "{{ 0.1 + 0.2 }} {{ 1/3 }} {{ 2 ** 10 }} {{ 2.0 ** 0.5 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7.5 % 2 }}",
    "{{ 1e16 }} {{ 1e-5 }} {{ 123456789.125 }} {{ 100.0 }} {{ 3 * 'ab' }} {{ [0] * 3 }} {{ 'a' ~ 1 ~ none }}",
    # messages, attributes and items
    "{% for m in messages %}{{ m.role }}:{{ m['content'] }}|{% endfor %}",
    "{{ messages[0].content|trim }}|{{ messages[-1]['role'] }}|{{ messages[9] is defined }}|{{ messages.0.role }}",
    "{{ messages[1:] | length }} {{ messages[::-1][0].role }} {{ messages[1:3]|map(attribute='role')|join(',') }}",
    "{{ messages[1].content[0] }}{{ messages[1].content[-3:] }}{{ messages[1].content[::2] }}{{ 'abc'[5:] }}",
    "{{ messages[0].missing }}|{{ messages[0]['missing'] is defined }}|{{ messages[0].missing is none }}",
    # tests and comparisons
    "{{ 1 is number }}{{ 'a' is string }}{{ none is none }}{{ x is undefined }}{{ messages is iterable }}"
    "{{ messages[0] is mapping }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 'ab' is lower }}",
    "{{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' in 'cat' }}"
    " {{ 2 not in [1, 2] }} {{ 'role' in messages[0] }} {{ messages[0] == messages[0] }} {{ true == 1 }}",
    "{{ none is not none }} {{ x is not defined }} {{ not x is defined }} {{ 'a' is equalto 'a' }} {{ 1 is sameas 1 }}",
    "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' or [] }} {{ none and 1 }} {{ not [] }}",
    # filters
    "{{ '  x  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'Hello World'|lower }}|{{ 'hi there'|upper }}"
    "|{{ 'hello world'|title }}|{{ 'hELLO'|capitalize }}|{{ 'a-b-c'|replace('-', '+') }}|{{ 'aaa'|replace('a', 'b', 2) }}",
    # trim takes str() of any value: a None content (a turn of tool calls alone) is "None"
    "{{ none|trim }}|{{ 5|trim }}|{{ [' a ']|trim }}|{{ x|trim }}|{{ true|trim('Te') }}",
    "{{ [3, 1, 2]|sort|list }} {{ [3, 1, 2]|sort(reverse=true)|join(',') }} {{ messages|map(attribute='role')|unique|list }}",
    "{{ messages|selectattr('role', 'equalto', 'user')|list|length }} {{ messages|rejectattr('role', 'eq', 'user')"
    "|map(attribute='role')|join }} {{ [0, 1, 2, '']|select|list }} {{ [1, 2, 3, 4]|reject('odd')|list }}",
    "{{ messages|first|tojson }} {{ messages[1]|tojson }}",
    "{{ {'b': [1, 2.5, none, true], 'a': 'é\\n\"'}|tojson }}|{{ {'a': [1, {'b': 2}]}|tojson(indent=2) }}|{{ []|tojson(indent=2) }}",
    "{{ x|default('d') }} {{ ''|default('e', true) }} {{ ''|d('f') }} {{ none|default('g') }}",
    "{{ '12'|int + 1 }} {{ '3.7'|float }} {{ 'x'|int }} {{ 3.9|int }} {{ -3|abs }} {{ 'abc'|length }} {{ 'ünï'|length }}",
    "{{ 'abc'|list }} {{ 'abc'|reverse }} {{ [1, 2]|reverse|list }} {{ 'abc'|first }}{{ 'abc'|last }} {{ []|first is defined }}",
    "{{ {'a': 1, 'b': 2}|items|list }} {{ ['a', 'b']|join('-') }} {{ [1, 2]|join }} {{ 5|string ~ 'x' }} {{ '<&>'|e }}",
    "{{ messages|map('length')|list if false else messages|map(attribute='content')|map('trim')|map('length')|list }}",
    "{{ messages|selectattr('role', 'in', ['system', 'assistant'])|map(attribute='role')|list }}",
    # methods
    "{{ '  a b '.strip() }}|{{ 'xay'.strip('xy') }}|{{ '  a'.lstrip() }}|{{ 'a  '.rstrip() }}|{{ 'a,b,,c'.split(',') }}"
    "|{{ ' a  b '.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}",
    "{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}{{ 'a b'.title() }}{{ 'ab'.replace('b', 'c') }}{{ 'abcb'.find('b') }}"
    "{{ 'abcb'.count('b') }}{{ '-'.join(['a', 'b']) }}{{ 'ünïb'.find('b') }}",
    "{{ messages[0].items()|list|length }} {{ messages[0].keys()|list }} {{ messages[0].get('role') }}"
    " {{ messages[0].get('x', 'dflt') }} {{ messages[0].get('x') }}",
    "{% for k, v in messages[0].items() %}{{ k }}={{ v|trim }};{% endfor %}",
    "{% set c = messages[2].content %}{% if '</think>' in c %}{{ c.split('</think>')[-1].strip() }}{% endif %}",
    # statements
    "{% set x = 1 %}{% if x > 1 %}a{% elif x == 1 %}b{% else %}c{% endif %}",
    "{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}"
    "{{ loop.revindex }}{{ loop.revindex0 }},{% endfor %}",
    "{% for m in messages if m.role == 'user' %}{{ loop.index }}/{{ loop.length }}:{{ m.content[:2] }} {% endfor %}",
    "{% for m in [] %}x{% else %}empty{% endfor %}{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}"
    "{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "{% for i in range(1, 10, 3) %}{{ i }}{% endfor %}{% for i in range(3, 0, -1) %}{{ i }}{% endfor %}",
    "{% for m in messages %}{% if loop.previtem is defined %}{{ loop.previtem.role[0] }}{% endif %}"
    "{% if loop.nextitem is defined %}{{ loop.nextitem.role[0] }}{% endif %}|{% endfor %}",
    "{% set ns = namespace(n=0, last='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% set ns.last = m.role %}"
    "{% endfor %}{{ ns.n }} {{ ns.last }}",
    "{% set x = 'outer' %}{% for m in messages %}{% set x = 'inner' %}{% endfor %}{{ x }}",
    "{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}",
    "{% set block %}Hi {{ messages[1].role }}{% endset %}[{{ block }}]",
    "{% macro turn(role, text='none') %}<{{ role }}>{{ text }}</{{ role }}>{% endmacro %}"
    "{{ turn('a') }}{{ turn('b', 'x') }}{{ turn(text='y', role='c') }}",
    "{% macro m(x) %}{{ x }}{{ caller_var }}{% endmacro %}{% set caller_var = 'top' %}{{ m(1) }}",
    "{% generation %}gen{% endgeneration %}",
    # rstrip keeps leading whitespace (SmolLM3's custom instructions), lstrip trailing; `in`
    # an undefined value is false (iterated as empty)
    "[{{ ' a b '.rstrip() }}|{{ '\\u3000x\\u3000 '.rstrip() }}|{{ ' x '.lstrip() }}|{{ '  '.rstrip() }}|"
    "{{ 'x' in nothing }}|{{ 'x' not in nothing }}]",
    "{{ bos_token }}{% for m in messages %}{{ '<|' + m.role + '|>\\n' + m.content + '<|end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}",
    "{{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %B %Y') }} {{ strftime_now('%A') }}",
    "{{ dict(a=1, b='x') }} {{ namespace(a=1).a }} {{ (messages|length > 2) and 'long' or 'short' }}",
    "{{ 'yes' if messages else 'no' }} {{ 'x' if none }}| {{ 1 if 0 else 2 if 0 else 3 }}",
    "{{ messages | length * 2 }} {{ -(messages|length) }} {{ 'a' + 'b' | upper }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }}",
    # integers past 32 bits stay exact; ranges near the end of int64
    "{{ 3000000000 + 1 }} {{ 3000000000 * 3 }} {{ 5 ** 27 }} {{ (-1) ** 5 }} {{ 0 ** 0 }} {{ range(0, 5 ** 27, 2 ** 62)|list }}",
    # transformers' tojson arguments: ensure_ascii, indent, separators, sort_keys
    "{{ {'b': 1, 'a': [1, 'é😀']}|tojson(separators=(',', ':')) }}|{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}"
    "|{{ 'é😀'|tojson(ensure_ascii=true) }}|{{ [1, [2]]|tojson(indent=-3) }}|{{ [1]|tojson(indent=0) }}",
    # jinja2's case-insensitive sort and unique; title as the filter and as str.title
    "{{ ['b', 'A', 'a', 'C']|sort|list }} {{ ['b', 'A', 'a']|sort(case_sensitive=true)|list }}"
    " {{ [2, 1, 2]|sort(reverse=true)|list }} {{ ['a', 'A', 'b']|unique|list }}"
    " {{ messages|unique(attribute='role')|map(attribute='role')|list }}",
    "{{ 'a_b don\\'t x-y (z) 2nd'|title }}|{{ 'a_b don\\'t x-y 2nd'.title() }}|{{ 'hELLO wORLD'|capitalize }}",
]

ERRORS = [  # (template, "syntax" or "render")
    ("{{ x.y }}", "render"), ("{{ x['y'] }}", "render"), ("{{ 1 + 'a' }}", "render"), ("{{ 1 / 0 }}", "render"),
    ("{{ raise_exception('no') }}", "render"), ("{% for x in none %}{% endfor %}", "render"),
    ("{{ 'a'.split('') }}", "render"), ("{{ [1] < ['a'] }}", "render"), ("{{ {}|tojson(indent=x.y) }}", "render"),
    ("{% set a, b = [1] %}", "render"), ("{{ x|nosuchfilter }}", "syntax"), ("{% if %}", "syntax"),
    ("{% if true %}open", "syntax"), ("{{ 'unclosed }}", "syntax"), ("{% include 'x' %}", "syntax"),
    ("{{ 1 is nosuchtest }}", "syntax"), ("{% for %}{% endfor %}", "syntax"), ("{{ (1 }}", "syntax"),
    ("{% endif %}", "syntax"), ("{{ a b }}", "syntax"), ("{{ -messages|length }}", "render"),
    ("a{% break %}b", "syntax"), ("{% for m in messages %}{% macro f() %}{% break %}{% endmacro %}{% endfor %}", "syntax"),
    ("{% macro f(a) %}{{ a }}{% endmacro %}{{ f(b=1) }}", "render"),
]


def strftime_now(fmt):
    return NOW.strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = transformers_tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    env = environment()
    env.add_extension(Generation)
    cases = []
    for name, (bos, eos) in REAL.items():
        with open(os.path.join(OUT_DIR, name + ".jinja"), encoding="utf-8") as f:
            tmpl = env.from_string(f.read())
        for messages, add in CONVERSATIONS:
            msgs = [{"role": r, "content": c} for r, c in messages]
            case = {"template": name, "messages": msgs, "add_generation_prompt": add, "bos_token": bos,
                    "eos_token": eos, "today": TODAY}
            try:
                case["expected"] = tmpl.render(messages=msgs, add_generation_prompt=add, bos_token=bos, eos_token=eos)
            except (TemplateError, jinja2.TemplateError, TypeError):
                case["error"] = "render"
            cases.append(case)
    for source, want in [(s, None) for s in SNIPPETS] + ERRORS:
        case = {"source": source, "messages": MESSAGES, "add_generation_prompt": True, "bos_token": "<s>",
                "eos_token": "</s>", "today": TODAY}
        try:
            tmpl = env.from_string(source)
        except (jinja2.TemplateSyntaxError, SyntaxError):  # SyntaxError: jinja2's generated Python
            assert want is not None, source
            case["error"] = "syntax"
            cases.append(case)
            continue
        try:
            case["expected"] = tmpl.render(messages=MESSAGES, add_generation_prompt=True, bos_token="<s>",
                                           eos_token="</s>")
            assert want is None, source
        except (TemplateError, jinja2.TemplateError, TypeError, ValueError, ZeroDivisionError) as e:  # include: not found
            assert want is not None, f"{source}: {e}"
            case["error"] = "render"
        cases.append(case)
    with open(os.path.join(OUT_DIR, "jinja.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(cases)} cases ({sum('error' in c for c in cases)} errors) in {OUT_DIR}/jinja.json")


if __name__ == "__main__":
    main()

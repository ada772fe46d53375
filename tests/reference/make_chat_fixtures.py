#!/usr/bin/env python3
"""Writes tests/data/chat/: chat templates and what Jinja (the `jinja2` package in the
sandboxed environment HF transformers renders them with) makes of a fixed set of
conversations, for
tests/unit/test_chat_template.cpp to compare what Whittle's Jinja renders with.

Templates (tests/data/chat/<name>.jinja): the tokenizer.chat_template of the default model
(SmolLM2-135M-Instruct) and of Qwen2.5-Coder-0.5B-Instruct, read from their GGUF files in
models/ when present (else the .jinja kept in the folder is used), and the published ones
written here: plain ChatML without a default system turn, Llama 3 (Meta-Llama-3-8B-Instruct's),
Zephyr (zephyr-7b-beta's, which TinyLlama-1.1B-Chat-v1.0 ships too; eos_token "</s>"), Gemma 3
(gemma-3-1b-it's; bos_token "<bos>"), the [INST] family (Llama-2-chat's; Mistral Instruct's
v0.1, v0.2 and v0.3, and Mixtral's) and Phi-3's and Phi-3.5's (eos_token "<|endoftext|>");
Llama 3.1's and 3.2's, Mistral Nemo's and Qwen3's, long, are kept in the folder as published
(KEPT) and read from there; so are SmolLM3-3B's and Qwen3-Coder's, as huggingface/swift-jinja's
tests keep them (Tests/Templates/ChatTemplates.swift at 5c0a878, indentation removed).

cases.json: a list of {"template", "messages", "add_generation_prompt", "bos_token",
"eos_token", "expected"} (and "vars", the template variables as JSON text, where given), where the template raises on the conversation "raises" (its
message) and where it fails otherwise "fails" instead of "expected", and where it drops a
message "dropped": the index of the first message of more than whitespace whose content
emptied renders the same text, and, where the template runs with it, other text there too
(the content and " x"); where it drops the tool calls of the first message that has some
(the same text without them), "dropped_calls": that message's index. Whittle refuses those.
Every message is checked here; Whittle checks the first of each class (role, tool_calls
absent, null, empty or not, a system message past the first place), so a case where the two
would differ shows as a failing test.
Contents carry no leading or trailing whitespace except in the cases that say so.

    pip install jinja2 gguf
    python3 tests/reference/make_chat_fixtures.py
"""
import datetime
import json
import os

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


class TemplateError(Exception):
    pass


def raise_exception(message):  # what transformers gives templates
    raise TemplateError(message)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(ROOT, "tests", "data", "chat")

FROM_GGUF = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "qwen2.5-coder": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
}

GEMMA3_TEMPLATE = r"""{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
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
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
"""

# Mistral-7B-Instruct-v0.3's (mistralai, tokenizer_config.json): a system message goes into
# the last message when that is a user turn; tool results need a tool call id.
MISTRAL_V03_TEMPLATE = """{%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}
                        {{- ", " }}
                    {%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- else %}
                    {{- "]" }}
                {%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
            {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\\n\\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
"""

# Kept as files in tests/data/chat/, as published (the script reads them, never writes them):
# Llama-3.2-3B-Instruct's (meta-llama's tokenizer_config.json, as llama.cpp keeps it in
# models/templates/): a system block of its own before the conversation (a knowledge date and
# today's date, strftime_now's where transformers defines it, else a literal) holding the
# first system message trimmed, each content trimmed, a tool result an "ipython" turn of its
# content as JSON; Meta-Llama-3.1-8B-Instruct's (Llama 3.3's too): the literal date, builtin
# tools, and a comment with an apostrophe ("we're"), which a reader must not take for a literal.
# Mistral-Nemo-Instruct-2407's (as llama.cpp keeps it): "[INST]" and "[/INST]" without spaces,
# the system message in the last message, replies as Mixtral's, tool markers without spaces.
# Qwen3's (Qwen3-0.6B's, which every Qwen3 size ships): ChatML that strips the reasoning
# (<think>...</think>) from replies before the last user query, and keeps it after.
# DeepSeek-R1-Distill's, Phi-4-mini's (as llama.cpp keeps it) and Mistral-Small-3.1's (which
# asks strftime_now for "%Y-%m-%d"), which tests/data/chat/jinja.json has too.
KEPT = ("llama3.1", "llama3.2", "mistral-nemo", "qwen3", "deepseek-r1-distill", "phi4-mini", "mistral-small-3.1",
        "smollm3", "qwen3-coder")
# The date transformers' strftime_now("%d %b %Y") is made to give, so the fixture is fixed.
LLAMA32_TODAY = "06 Dec 2026"
TODAY = datetime.datetime.strptime(LLAMA32_TODAY, "%d %b %Y")


def transformers_tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    """transformers' tojson filter (not Jinja's, which escapes HTML characters)."""
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


WRITTEN = {
    # ChatML as many fine-tunes ship it: no default system turn.
    "chatml": ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
               "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
               "{{ '<|im_start|>assistant\\n' }}{% endif %}"),
    # Meta-Llama-3-8B-Instruct: each content trimmed, BOS before the first message.
    "llama3": ("{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
               "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim "
               "+ '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
               "{{ content }}{% endfor %}{% if add_generation_prompt %}"
               "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"),
    # Zephyr (HuggingFaceH4/zephyr-7b-beta, TinyLlama-1.1B-Chat-v1.0): each turn ends with EOS.
    "zephyr": ("{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\\n' + "
               "message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\\n' + "
               "message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n"
               "{{ '<|assistant|>\\n'  + message['content'] + eos_token }}\n{% endif %}\n"
               "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}"),
    # Gemma 3 (google/gemma-3-1b-it's): BOS, a system message as the first user turn's prefix,
    # roles that must alternate (raise_exception otherwise), each content trimmed.
    "gemma3": GEMMA3_TEMPLATE,
    # Llama-2-chat (meta-llama/Llama-2-13b-chat-hf's): BOS before every user turn, a first
    # system message as a <<SYS>> block inside the first one, contents stripped.
    "llama2": ("{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
               "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}"
               "{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0)"
               " %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
               "{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + "
               "system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = "
               "message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + "
               "content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + "
               "' ' + eos_token }}{% endif %}{% endfor %}"),
    # Mistral-7B-Instruct-v0.1's first template: no system role, a space after each EOS.
    "mistral-v0.1": ("{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % "
                     "2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/"
                     "...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' "
                     "[/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token + ' ' }}"
                     "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}"
                     "{% endfor %}"),
    # Mixtral-8x7B-Instruct-v0.1's (and the Mistral-7B-Instruct-v0.2 GGUFs of early 2024).
    "mixtral": ("{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == "
                "0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
                "{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
                "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}"
                "{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}"),
    # Mistral-7B-Instruct-v0.2's template of mid 2024: a system message in the first user turn.
    "mistral-v0.2": ("{%- if messages[0]['role'] == 'system' %}\n    {%- set system_message = messages[0]['content'] %}"
                     "\n    {%- set loop_messages = messages[1:] %}\n{%- else %}\n    {%- set loop_messages = messages "
                     "%}\n{%- endif %}\n\n{{- bos_token }}\n{%- for message in loop_messages %}\n    {%- if "
                     "(message['role'] == 'user') != (loop.index0 % 2 == 0) %}\n        {{- raise_exception('After "
                     "the optional system message, conversation roles must alternate user/assistant/user/assistant/"
                     "...') }}\n    {%- endif %}\n    {%- if message['role'] == 'user' %}\n        {%- if loop.first "
                     "and system_message is defined %}\n            {{- ' [INST] ' + system_message + '\\n\\n' + "
                     "message['content'] + ' [/INST]' }}\n        {%- else %}\n            {{- ' [INST] ' + "
                     "message['content'] + ' [/INST]' }}\n        {%- endif %}\n    {%- elif message['role'] == "
                     "'assistant' %}\n        {{- ' ' + message['content'] + eos_token}}\n    {%- else %}\n        "
                     "{{- raise_exception('Only user and assistant roles are supported, with the exception of an "
                     "initial optional system message!') }}\n    {%- endif %}\n{%- endfor %}\n"),
    "mistral-v0.3": MISTRAL_V03_TEMPLATE,
    # The same with the other spelling of the system message's place in Mistral's templates:
    # every user turn equal to the last one (Jinja compares the whole messages).
    "mistral-v0.3-last-user": MISTRAL_V03_TEMPLATE.replace("loop.last and system_message",
                                                           "(message == user_messages[-1]) and system_message"),
    # Phi-3-mini-4k-instruct's: "<|role|>\n" + content + "<|end|>\n", then the assistant's tag or EOS.
    "phi3": ("{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\\n' + message['content'] + "
             "'<|end|>\\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}"
             "{% elif message['role'] == 'assistant' %}{{'<|assistant|>\\n' + message['content'] + '<|end|>\\n'}}"
             "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}"
             "{% endif %}"),
    # Phi-3.5-mini-instruct's: the same, but a system message only when it has content; its
    # literals hold real newlines, not the escape (as its tokenizer_config.json and llama.cpp's
    # models/templates/ have it).
    "phi3.5": ("{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}{{'<|system|>\n' "
               "+ message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + "
               "message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + "
               "message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}"
               "{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}"),
}

# The BOS and EOS texts each family's template is rendered with (and Whittle given).
SPECIAL = {"gemma3": ("<bos>", "<eos>"), "llama3.2": ("<|begin_of_text|>", "<|eot_id|>"),
           "llama3.1": ("<|begin_of_text|>", "<|eot_id|>"), "llama2": ("<s>", "</s>"), "mistral-v0.1": ("<s>", "</s>"),
           "mixtral": ("<s>", "</s>"), "mistral-v0.2": ("<s>", "</s>"), "mistral-v0.3": ("<s>", "</s>"),
           "mistral-v0.3-last-user": ("<s>", "</s>"), "mistral-nemo": ("<s>", "</s>"),
           "phi3": ("<s>", "<|endoftext|>"), "phi3.5": ("<s>", "<|endoftext|>"),
           "qwen3": ("", "<|im_end|>"), "deepseek-r1-distill": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
           "phi4-mini": ("<|endoftext|>", "<|endoftext|>"), "mistral-small-3.1": ("<s>", "</s>"),
           "smollm3": ("", "<|im_end|>"), "qwen3-coder": ("", "<|im_end|>")}

CONVERSATIONS = [
    ([("user", "Hi")], True),
    ([("user", "What is the capital of France? Answer in one sentence.")], True),
    ([("system", "Be brief."), ("user", "Hi")], True),
    ([("user", "Hi"), ("assistant", "Hello! How can I help?"), ("user", "Name a prime.")], True),
    ([("user", "Hi"), ("assistant", "Hello!")], False),
    ([("system", "You answer in French."), ("user", "Say 'yes'.\nThen \"no\".")], True),
    ([("user", "  Hi there \n")], True),  # Llama 3 trims each content
    ([("user", "\u3000\x1f\tHi\u00a0there\u2028\x85 \u200b")], True),  # what str.strip takes, and not (U+200B)
    ([("user", "Hi\u2029\u00a0\x1c\u205f")], True),
    # Tool results: Qwen2.5 makes a run of them one user turn of <tool_response> blocks.
    ([("user", "What is 2+2?"), ("assistant", "Let me compute it."), ("tool", "4"), ("tool", "four"),
      ("user", "Thanks")], True),
    ([("tool", "42")], True),
    ([("user", "Run it"), ("assistant", "ok"), ("tool", "{\"a\": \"b\\\\c\"}\n\u00e9\x01\t")], True),  # JSON-escaped by
    # Llama 3.2 (quotes, a backslash, a newline, a control character, a trailing tab)
    # Replies with spaces around them (Llama 2 and Mistral v0.3 strip them); a conversation that
    # ends with a reply (Mistral v0.3 then writes its system message nowhere).
    ([("user", "Who are you"), ("assistant", "   I am an assistant   "), ("user", "Another question")], True),
    ([("system", "Be brief."), ("user", "Hi"), ("assistant", " Hello! ")], False),
    ([("system", " Be brief. "), ("user", "Hi"), ("assistant", "Hello!"), ("user", " Why? ")], True),
    ([("system", ""), ("user", "Hi")], True),  # an empty system message (Phi-3.5 leaves it out)
    # A user message repeated: Mistral's `message == user_messages[-1]` holds for both.
    ([("system", "S"), ("user", "go on"), ("assistant", "x"), ("user", "go on")], True),
    # A system message past the first: an ordinary turn where the template has no other place.
    ([("user", "Hi"), ("assistant", "Hello!"), ("system", " Be brief. "), ("user", "Why?")], True),
    # Replies with their reasoning: Qwen3 and DeepSeek-R1 drop it from turns before the last
    # user query and keep it after (Qwen3's tool calls in between).
    ([("user", "Hi"), ("assistant", "<think>\nA greeting.\n</think>\n\nHello!"), ("user", "Name a prime.")], True),
    ([("user", "2+2?"), ("assistant", "<think>add</think>4")], False),
    ([("system", "S"), ("user", "Weather?"), ("assistant", "<think>ask the tool</think>Calling."), ("tool", "sunny"),
      ("assistant", "<think>\n\nit is sunny\n</think>It is sunny.")], False),
    ([("user", "a"), ("assistant", "</think>no opening"), ("user", "<tool_response>x</tool_response>")], True),
    # A reply of reasoning alone before the last query: Qwen3 and DeepSeek-R1 strip it (the same
    # text emptied), but write other text there: not a dropped message.
    ([("user", "a"), ("assistant", "<think>r</think>"), ("user", "b")], True),
    # Nothing but a system message: Gemma 3 and Mistral v0.3 write it nowhere.
    ([("system", "Alone.")], True),
    # Whitespace alone loses nothing where a template drops it (Zephyr's tool message).
    ([("user", "Hi"), ("assistant", "Hello!"), ("tool", " \u00a0")], True),
    # A system message equal to the template's default is no dropped message (SmolLM2's).
    ([("system", "You are a helpful AI assistant named SmolLM, trained by Hugging Face"), ("user", "Hi")], True),
    ([("system", "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."), ("user", "Hi")], True),
]

# Conversations rendered with the caller's template variables (wt_chat_apply_vars), as
# transformers' apply_chat_template(**kwargs) passes them, for every template: those that do
# not read a variable must render as without it. The case's "vars" is the JSON text Whittle reads.
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather now in a city, in °C.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "Say \"Zürich\", not ZH"},
        "days": {"type": "integer", "minimum": 1, "maximum": 7.5, "default": None}},
        "required": ["city"]}}}
VAR_CASES = [
    ([("user", "Hi")], True, {"enable_thinking": False}),
    ([("user", "Hi"), ("assistant", "Hello!"), ("user", "Name a prime.")], True, {"enable_thinking": True}),
    ([("system", "Be brief."), ("user", "Weather in Zürich?")], True, {"tools": [WEATHER_TOOL]}),
    ([("user", "Weather in Paris?")], True, {"tools": [WEATHER_TOOL], "tools_in_user_message": False,
                                            "date_string": "26 Jul 2024"}),
    ([("user", "Hi")], True, {"tools": [], "documents": [{"title": "t", "text": "x"}], "custom": [1, 2.5, None]}),
    # SmolLM3's own: tools listed as Python's str() of each dict, reasoning switched by the
    # variable or by /think and /no_think in the system message.
    ([("system", "Be brief. /no_think"), ("user", "Weather?")], True,
     {"xml_tools": [WEATHER_TOOL], "python_tools": ["def f(x: int) -> str: ...", {"name": "g", "ok": True}]}),
    ([("system", "/think"), ("user", "Hi"), ("assistant", "\n\nHello!")], False, {"enable_thinking": False}),
]

# Conversations with tool calls, as whole messages (wt_chat_apply_json): an assistant's
# "tool_calls" (OpenAI's shape: arguments a JSON text, or a dict as transformers' docs write
# them), a tool result's "tool_call_id" and "name", contents null or absent beside calls. Each
# with the weather tool listed and without.
CALL = {"id": "call12345", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
CALL_TEXT = {"id": "call12345", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}
CALL_2 = {"id": "call67890", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Nice"}}}
RESULT = {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "{\"temp\": 21}"}
ASK = {"role": "user", "content": "Weather in Paris?"}
TOOL_CONVERSATIONS = [
    ([ASK, {"role": "assistant", "content": None, "tool_calls": [CALL]}, RESULT], True),
    ([ASK, {"role": "assistant", "content": "", "tool_calls": [CALL_TEXT]}, RESULT,
      {"role": "assistant", "content": "It is 21 °C in Paris."}, {"role": "user", "content": "And tomorrow?"}], True),
    ([ASK, {"role": "assistant", "tool_calls": [CALL]}], False),  # content absent
    # Text beside the call: Llama 3.1's, 3.2's and Mistral's write only the call (refused: dropped).
    ([ASK, {"role": "assistant", "content": "Let me look.", "tool_calls": [CALL]}, RESULT], True),
    # Two calls at once (Llama 3.x raises), and their two results.
    ([{"role": "system", "content": "Be brief."}, ASK,
      {"role": "assistant", "content": None, "tool_calls": [CALL, CALL_2]}, RESULT,
      {"role": "tool", "tool_call_id": "call67890", "name": "get_weather", "content": "18"}], True),
    # An empty list of calls: no call for SmolLM2's, a turn of calls for Mistral's, which then
    # drop its text; after a plain reply too (a class of its own).
    ([ASK, {"role": "assistant", "content": "Sunny.", "tool_calls": []}], False),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": "q2"},
      {"role": "assistant", "content": "Let me look.", "tool_calls": []}], False),
]
TOOL_CASES = [(m, add, v) for m, add in TOOL_CONVERSATIONS for v in ({}, {"tools": [WEATHER_TOOL]})]

# Replies (replies.json): each assistant message of these conversations as the template writes
# it after the conversation before it, what wt_chat_parse_reply must read back.
CALL_ODD = {"id": "call24680", "type": "function", "function": {"name": "search", "arguments": {
    "query": "caf\u00e9 \u00abParis\u00bb \"x\"\n\ttab \\ [1] {2} \U0001F600", "filters": {"max": 3, "tags": ["a", "b"]},
    "exact": True, "score": 0.5, "none": None}}}
REPLY_CONVERSATIONS = [m for m, _ in TOOL_CONVERSATIONS] + [
    [ASK, {"role": "assistant", "content": None, "tool_calls": [CALL_ODD]}],
    [ASK, {"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": {"name": "now", "arguments": {}}}]}],
    [ASK, {"role": "assistant", "reasoning_content": "The user wants the weather.", "content": None,
           "tool_calls": [CALL]}],
    [ASK, {"role": "assistant", "reasoning_content": "Paris is in France.\nIt is June.", "content": "It is sunny."}],
]
# The texts a generation ends at, which a reply does not hold.
TURN_ENDS = ("<|im_end|>\n", "<|im_end|>", "<|eot_id|>", "<|eom_id|>", "</s>", "<|end|>", "<|endoftext|>",
             "<\uff5cend\u2581of\u2581sentence\uff5c>", "<end_of_turn>\n")


def object_of(args):
    """The object a call's arguments given as a JSON text hold, or None."""
    if not isinstance(args, str):
        return None
    try:
        value = json.loads(args)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def as_served(msgs):
    """The messages as vLLM and llama.cpp pass them to a template (and wt_chat_apply_json reads
    them): a call's arguments given as a JSON text of an object (OpenAI's API writes them so) as
    that object, under "function" or on the call itself. transformers passes the text, which
    templates that write arguments with tojson (Qwen2.5's, Llama's) would quote."""
    def call(c):
        f = c.get("function")
        if isinstance(f, dict) and object_of(f.get("arguments")) is not None:
            return {**c, "function": {**f, "arguments": object_of(f["arguments"])}}
        if object_of(c.get("arguments")) is not None:
            return {**c, "arguments": object_of(c["arguments"])}
        return c
    return [{**m, "tool_calls": [call(c) for c in m["tool_calls"]]} if isinstance(m.get("tool_calls"), list) else m
            for m in msgs]


def render_served(render_messages, ms):
    """As wt_chat_apply_json renders: string arguments as objects (as_served); the messages as
    given where the template fails with the objects (DeepSeek-R1's adds the arguments to a
    string)."""
    served = as_served(ms)
    if served == ms:
        return render_messages(ms)
    try:
        return render_messages(served)
    except (TemplateError, jinja2.TemplateError, TypeError):
        return render_messages(ms)


def written(call):
    """A call's arguments as the reply holds them: a JSON text went in as its object."""
    args = call["function"]["arguments"]
    return object_of(args) if object_of(args) is not None else args


def expected_reply(m, reply):
    """The message wt_chat_parse_reply reads from reply, from the message it was written from:
    its calls (an id where the template wrote it), its content where the template wrote it
    (trimmed beside calls), its reasoning; None where a plain reply is not its content alone."""
    calls = m.get("tool_calls") or []
    content = m.get("content")
    rc = m.get("reasoning_content")
    if calls:
        if not all(c["function"]["name"] in reply for c in calls):
            return None  # the template dropped them
        content = content.strip() if isinstance(content, str) and content.strip() and content.strip() in reply else None
    else:
        body = reply
        if rc is not None or reply.startswith("<think>"):
            head, sep, body = reply.rpartition("</think>")  # as Qwen3's template: after the last
            body = body.lstrip("\n")
        if body != content:
            return None
    out = {"role": "assistant", "content": content}
    if rc and rc.strip("\n") and rc in reply:
        out["reasoning_content"] = rc.strip("\n")
    if calls:
        out["tool_calls"] = [{**({"id": c["id"]} if c["id"] in reply else {}), "type": "function",
                              "function": {"name": c["function"]["name"], "arguments": written(c)}}
                             for c in calls]
    return out


def reply_cases(name, render, bos, eos):
    """Each assistant message k: the text the template adds for it after msgs[:k] with the
    generation prompt, its end of turn cut, and the message read back; with the tools listed
    and without."""
    out = []
    for msgs in REPLY_CONVERSATIONS:
        for k, m in enumerate(msgs):
            if m["role"] != "assistant":
                continue
            for variables in ({}, {"tools": [WEATHER_TOOL]}):
                try:
                    before = render(msgs[:k], True, variables)
                    full = render(msgs[:k + 1], False, variables)
                except (TemplateError, jinja2.TemplateError, TypeError):
                    continue
                if not full.startswith(before):
                    continue
                reply = full[len(before):]
                while any(reply.endswith(e) for e in TURN_ENDS):
                    reply = reply[:-len(next(e for e in TURN_ENDS if reply.endswith(e)))]
                expected = expected_reply(m, reply)
                if expected is None:
                    continue
                case = {"template": name, "bos_token": bos, "eos_token": eos, "today": LLAMA32_TODAY,
                        "before": msgs[:k], "message": m, "reply": reply, "expected": expected, "rendered": full}
                if variables:
                    case["vars"] = json.dumps(variables, ensure_ascii=False)
                out.append(case)
    return out


# transformers' {% generation %} (its AssistantTracker extension) writes its body.
class Generation(jinja2.ext.Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def gguf_template(path):
    import gguf  # only when a model is there to read
    reader = gguf.GGUFReader(path)
    field = reader.fields["tokenizer.chat_template"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    templates = dict(WRITTEN)
    for name in KEPT:
        with open(os.path.join(OUT_DIR, name + ".jinja"), encoding="utf-8") as f:
            templates[name] = f.read()
    for name, file in FROM_GGUF.items():
        path = os.path.join(ROOT, "models", file)
        kept = os.path.join(OUT_DIR, name + ".jinja")
        if os.path.exists(path):
            templates[name] = gguf_template(path)
        else:
            with open(kept, encoding="utf-8") as f:
                templates[name] = f.read()
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,  # as transformers renders
                                        extensions=[jinja2.ext.loopcontrols, Generation])
    env.filters["tojson"] = transformers_tojson
    cases = []
    replies = []
    for name in sorted(templates):
        with open(os.path.join(OUT_DIR, name + ".jinja"), "w", encoding="utf-8") as f:
            f.write(templates[name])
        tmpl = env.from_string(templates[name])
        bos, eos = SPECIAL.get(name, ("<|begin_of_text|>", "</s>"))

        def render_as(ms, add, variables, tmpl=tmpl, bos=bos, eos=eos):
            return render_served(lambda m: tmpl.render(
                messages=m, add_generation_prompt=add, bos_token=bos, eos_token=eos, raise_exception=raise_exception,
                strftime_now=lambda fmt: TODAY.strftime(fmt), **variables), ms)

        replies += reply_cases(name, render_as, bos, eos)
        for messages, add, variables in [c + ({},) for c in CONVERSATIONS] + VAR_CASES + TOOL_CASES:
            msgs = [m if isinstance(m, dict) else {"role": m[0], "content": m[1]} for m in messages]
            bos, eos = SPECIAL.get(name, ("<|begin_of_text|>", "</s>"))
            # strftime_now as transformers defines it, at a fixed date (Llama 3.1 never asks)
            extra = {"strftime_now": lambda fmt: TODAY.strftime(fmt)}

            def render(ms):
                # tools and documents undefined unless given, as llama.cpp renders: transformers
                # passes None, and Phi-4-mini's template then fails (`tools is defined`, iterated)
                kwargs = {**extra, **variables}
                return render_served(lambda m: tmpl.render(messages=m, add_generation_prompt=add, bos_token=bos,
                                                           eos_token=eos, raise_exception=raise_exception,
                                                           **kwargs), ms)

            case = {"template": name, "messages": msgs, "add_generation_prompt": add, "bos_token": bos,
                    "eos_token": eos}
            if variables:
                case["vars"] = json.dumps(variables, ensure_ascii=False)
            case["today"] = LLAMA32_TODAY
            try:
                case["expected"] = render(msgs)
            except TemplateError as e:
                case["raises"] = str(e)
                cases.append(case)
                continue
            except (jinja2.TemplateError, TypeError) as e:  # an undefined value's item, str + None, ...
                case["fails"] = str(e)
                cases.append(case)
                continue
            for i, m in enumerate(msgs):
                if not isinstance(m.get("content"), str) or not m["content"].strip():
                    continue
                # the same text with its content emptied
                try:
                    same = render(msgs[:i] + [{**m, "content": ""}] + msgs[i + 1:]) == case["expected"]
                except (TemplateError, jinja2.TemplateError, TypeError):
                    same = False
                # and with other text there (the content with " x" after it), where the template
                # runs with it
                if same:
                    try:
                        same = render(msgs[:i] + [{**m, "content": m["content"] + " x"}] + msgs[i + 1:]) == case["expected"]
                    except (TemplateError, jinja2.TemplateError, TypeError):
                        pass
                if same:
                    case["dropped"] = i
                    break
            # The first message with calls: the same text without them drops them.
            calls = [i for i, m in enumerate(msgs) if m.get("tool_calls")]
            if "dropped" not in case and calls:
                i = calls[0]
                try:
                    if render(msgs[:i] + [{k: v for k, v in msgs[i].items() if k != "tool_calls"}] +
                              msgs[i + 1:]) == case["expected"]:
                        case["dropped_calls"] = i
                except (TemplateError, jinja2.TemplateError, TypeError):
                    pass
            cases.append(case)
    with open(os.path.join(OUT_DIR, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(OUT_DIR, "replies.json"), "w", encoding="utf-8") as f:
        json.dump(replies, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(replies)} replies of {len({r['template'] for r in replies})} templates")
    print(f"{len(templates)} templates, {len(cases)} cases ({sum('raises' in c for c in cases)} raise, "
          f"{sum('dropped' in c for c in cases)} drop a message, {sum('dropped_calls' in c for c in cases)} "
          f"tool calls) in {OUT_DIR}")


if __name__ == "__main__":
    main()

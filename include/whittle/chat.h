/* whittle/chat.h — part of whittle.h, which includes it; never include it on its own.
 * Chat: a conversation formatted with the model's own template, and a reply read back into
 * a message (its reasoning and tool calls taken out).
 * The types, conventions and extern "C" block are whittle.h's. */
#ifndef WHITTLE_CHAT_H
#define WHITTLE_CHAT_H
#ifndef WHITTLE_H
#error "include whittle.h: it includes this part where it belongs"
#endif

typedef struct wt_chat_message {
  const char* role; /* "system", "user", "assistant" or "tool" (a tool's result) */
  const char* content;
} wt_chat_message;

/* Formats messages with the model's GGUF chat template (tokenizer.chat_template), run as
 * transformers runs it (a bounded subset of Jinja). add_assistant opens the assistant turn.
 * Writes a NUL-terminated string. WT_ERR_UNSUPPORTED: no template, one that uses what
 * Whittle's Jinja lacks, fails on these messages or writes nothing for one of them of more
 * than whitespace (the message says which); its raise_exception is WT_ERR_INVALID_ARGUMENT.
 * WT_ERR_BUFFER_TOO_SMALL: *out_len gets the length needed. WT_ERR_INVALID_ARGUMENT (before
 * any template's error): NULL model or out_len, NULL messages with n_messages > 0, a NULL
 * role or content, a role other than system, user, assistant, tool, too many messages. */
WT_API wt_status wt_chat_apply(const wt_model* model, const wt_chat_message* messages,
                               size_t n_messages, bool add_assistant, char* buf,
                               size_t capacity, size_t* out_len);
/* wt_chat_apply with variables the template reads (apply_chat_template's kwargs): vars_json
 * is a JSON object (NULL or "": none): {"enable_thinking": false} for Qwen3 and SmolLM3,
 * {"tools": [...function schemas]} for templates that list tools. WT_ERR_INVALID_ARGUMENT
 * also for malformed JSON (the message gives the byte) or not an object, over 1 MiB, a repeated
 * name, an integer past int64, nesting past 64, more than 256 names, or a name the call sets
 * (messages, add_generation_prompt, bos_token, eos_token, raise_exception, strftime_now). */
WT_API wt_status wt_chat_apply_vars(const wt_model* model, const wt_chat_message* messages,
                                    size_t n_messages, bool add_assistant,
                                    const char* vars_json, char* buf, size_t capacity,
                                    size_t* out_len);
/* wt_chat_apply_vars with the messages as a JSON array of objects (at most 8 MiB), as
 * transformers takes them: "role" (as above), "content" (a string; null: None; absent:
 * undefined) and any members the template reads, in their order: an assistant's "tool_calls"
 * (a function's "arguments" an object, or OpenAI's JSON text of one, which goes in as the
 * object, as vLLM passes it; as the text where the template fails with objects: DeepSeek-R1's
 * adds them to a string), a tool's "tool_call_id". WT_ERR_INVALID_ARGUMENT also: NULL messages_json, malformed JSON, not an
 * array of objects, content parts, tool_calls neither null nor a list of objects.
 * WT_ERR_UNSUPPORTED also: the template writes nothing of the first tool_calls given. */
WT_API wt_status wt_chat_apply_json(const wt_model* model, const char* messages_json,
                                    bool add_assistant, const char* vars_json, char* buf,
                                    size_t capacity, size_t* out_len);
/* Reads a reply the model generated (its text with control tokens, as wt_detokenizer_push
 * writes it) as the message its template writes, in wt_chat_apply_json's JSON: {"role":
 * "assistant", "content": the text outside calls (null if none beside calls), then where
 * present "reasoning_content" (before the last </think>, for templates that think) and
 * "tool_calls": [{"type": "function", "function": {"name": ..., "arguments": as written}}]
 * ("id" first where the model writes one)}; text between calls joins the content, a newline
 * apart. Calls as Qwen2.5/3 (<tool_call>, or a reply of bare JSON calls), Llama 3.1/3.2 (a
 * reply of JSON calls, or all after <|python_tag|>), Mistral ([TOOL_CALLS]) and
 * Phi-4-mini (<|tool_call|>) write them; else all content. WT_ERR_INVALID_ARGUMENT: NULL model,
 * reply or out_len, over 8 MiB, not UTF-8, a call not closed, not JSON, without a name or
 * nested too deep (the message gives the byte). WT_ERR_UNSUPPORTED: a call in a format not
 * read (Qwen3-Coder's, DeepSeek-R1's, Llama's built-in tools). WT_ERR_BUFFER_TOO_SMALL as
 * wt_chat_apply. */
WT_API wt_status wt_chat_parse_reply(const wt_model* model, const char* reply, char* buf,
                                     size_t capacity, size_t* out_len);

#endif /* WHITTLE_CHAT_H */

// The chat template families whose recognisers read the template's expressions
// (jinja_text.h) instead of a marker: the [INST] family (chat_inst.cpp) and Llama 3.1-3.3
// (chat_llama3.cpp). Internal to runtime/model/: chat_template.cpp dispatches to them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat_template.h"

namespace wt {

// Whether every expression of `ex` is one of `known` or a raise_exception(...) call (which
// writes nothing): a template with another writes something the recogniser does not.
bool expressions_within(const std::vector<std::string>& ex, const std::vector<std::string>& known);

// Llama 2 chat and Mistral Instruct v0.1-v0.3 / Mixtral: WT_ERR_UNSUPPORTED unless every
// expression is one of a published template's (and it writes no text of its own).
Status parse_inst(const std::string& jinja, InstStyle* st);
// The generation prompt is the user turn's own close: these templates ignore add_assistant.
Status apply_inst(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, std::string* out);

// Llama 3.1-3.3's templates (a system block of their own: the knowledge date, today's date
// and the first system message): fills out->llama3_system_block and the date fields, or
// WT_ERR_UNSUPPORTED naming the expression Whittle does not recognise.
Status parse_llama31(const std::string& jinja, ChatTemplate* out);
// today: the date strftime_now("%d %b %Y") gives where the template asks for it (null: the
// local date now).
Status apply_llama31(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, bool add_assistant,
                     const std::string* today, std::string* out);

// Any other template, run (chat_jinja.cpp, jinja.h): WT_ERR_UNSUPPORTED where it uses what
// Whittle's Jinja lacks.
Status compile_chat_jinja(const std::string& jinja, std::shared_ptr<const JinjaProgram>* out);
// Messages are dicts of role and content; the template's raise_exception is
// WT_ERR_INVALID_ARGUMENT; today as for apply_llama31, for strftime_now in any format.
Status apply_chat_jinja(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, bool add_assistant,
                        const std::string* today, std::string* out);

}  // namespace wt

// Chat formatting by running the template itself (jinja.h), for templates no recogniser
// formats natively.
#include <ctime>

#include "chat_families.h"
#include "jinja.h"

namespace wt {

Status compile_chat_jinja(const std::string& jinja, std::shared_ptr<const JinjaProgram>* out) {
  auto program = std::make_shared<JinjaProgram>();
  WT_TRY(jinja_parse(jinja, program.get()));
  *out = std::move(program);
  return Status::ok();
}

Status apply_chat_jinja(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages, bool add_assistant,
                        const std::string* today, std::string* out) {
  JinjaRenderOptions options;
  if (today) {
    if (!strptime(today->c_str(), "%d %b %Y", &options.now))
      return error(WT_ERR_INVALID_ARGUMENT, "a date not written as \"06 Dec 2026\": " + *today);
    const std::time_t t = timegm(&options.now);  // fills the weekday and the day of the year
    gmtime_r(&t, &options.now);
  } else {
    const std::time_t now = std::time(nullptr);
    localtime_r(&now, &options.now);
  }
  JinjaList list;
  list.reserve(messages.size());
  for (const ChatMessage& m : messages)
    list.push_back(JinjaValue::of_dict({{"role", JinjaValue::string(m.role)}, {"content", JinjaValue::string(m.content)}}));
  const JinjaDict globals = {
      {"messages", JinjaValue::of_list(std::move(list))},
      {"add_generation_prompt", JinjaValue::boolean(add_assistant)},
      {"bos_token", JinjaValue::string(tmpl.bos_token)},
      {"eos_token", JinjaValue::string(tmpl.eos_token)},
      {"raise_exception", JinjaValue::function("raise_exception")},
      {"strftime_now", JinjaValue::function("strftime_now")},
  };
  return jinja_render(*tmpl.program, globals, options, out);
}

}  // namespace wt

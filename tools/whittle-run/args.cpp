// whittle-run's command line (args.h).
#include "args.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "tools/common/flags.h"
#include "tools/common/prune_methods.h"
#include "tools/common/rope_flags.h"

namespace wt_run {

namespace {

// The most a context holds (wt_context_params.n_ctx), so the most -c and -n can ask for.
constexpr int kMaxContext = 1 << 20;
// A prompt file past this is refused before it is read whole: 16 MiB of text is millions of
// tokens, more than any context holds (and /dev/zero never ends).
constexpr size_t kMaxPromptFileBytes = size_t{16} << 20;

// Reads the file of -f or --messages (`flag`) into *out, refusing a directory, a read error and
// a file larger than kMaxPromptFileBytes (a device such as /dev/zero included) with what went wrong.
bool read_prompt_file(const std::string& flag, const char* path, std::string* out) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return wt_tools::Flags::fail(flag + " " + path + " is a directory");
  FILE* file = std::fopen(path, "rb");
  if (!file) return wt_tools::Flags::fail(flag + " cannot open " + path + ": " + std::strerror(errno));
  std::vector<char> chunk(65536);
  out->clear();
  size_t got = 0;
  while ((got = std::fread(chunk.data(), 1, chunk.size(), file)) > 0) {
    if (out->size() + got > kMaxPromptFileBytes) {
      std::fclose(file);
      return wt_tools::Flags::fail(flag + " " + path + " is larger than " +
                                   std::to_string(kMaxPromptFileBytes >> 20) + " MiB, more than any context holds");
    }
    out->append(chunk.data(), got);
  }
  const bool read_failed = std::ferror(file) != 0;
  const int read_errno = errno;
  std::fclose(file);
  if (read_failed) return wt_tools::Flags::fail(flag + " cannot read " + path + ": " + std::strerror(read_errno));
  return true;
}

// A number strtod reads whole that is finite as a float (not nan, inf or 1e39).
bool finite_number(wt_tools::Flags& f, float* out) {
  const std::string name = f.flag();
  double d = 0;
  if (!f.number(&d)) return false;
  if (!std::isfinite(static_cast<float>(d))) return wt_tools::Flags::fail(name + " expects a finite number");
  *out = static_cast<float>(d);
  return true;
}

// A whole number in [0, 2^64 - 1], all digits (no sign, no exponent).
bool seed_number(wt_tools::Flags& f, unsigned long long* out) {
  const std::string name = f.flag();
  const char* v = nullptr;
  if (!f.text(&v)) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || v[0] < '0' || v[0] > '9')
    return wt_tools::Flags::fail(name + " '" + v + "' is not a whole number in [0, 18446744073709551615]");
  *out = x;
  return true;
}

}  // namespace

void usage(FILE* out, const char* argv0) {
  std::fprintf(out,
               "usage: %s -m MODEL -p PROMPT [--chat] [--system TEXT] [-n N] [-t THREADS] [-c N_CTX]\n"
               "          [--chat-template-kwargs JSON] [--prompt-cache FILE]\n"
               "       %s -m MODEL --messages CONVERSATION.json [-n N] [-t THREADS] [-c N_CTX]\n"
               "          [--chat-template-kwargs JSON] [--prompt-cache FILE] [--reply-json]\n"
               "       %s -m MODEL -i [--system TEXT] [-p FIRST_MESSAGE] [options as above]\n"
               "          [--temp T] [--top-k K] [--top-p P] [--min-p P] [--seed S] [--f32-activations]\n"
               "          [--repeat-penalty R] [--repeat-last-n N] [--frequency-penalty F] [--presence-penalty P]\n"
               "          [-f PROMPT_FILE] [--prune METHOD] [--prune-param KEY=VALUE]... [--stop TEXT]... [-v]\n"
               "          [--backend cpu|vulkan|cuda] [--kv-type f32|f16|q8_0] [--batch-rows N] [--memory-budget MIB]\n"
               "          [--rope-scaling none|linear|yarn] [--rope-scale F] [--yarn-orig-ctx N]\n"
               "       %s --list-methods   (the methods and their parameters, as a markdown table)\n"
               "  -n N       most tokens to generate, 0 to %d (default 128)\n"
               "  -t N       CPU worker threads, 0 to %d; 0 = all cores (default); ops run on fewer\n"
               "             while other threads hold the cores (the speed lines say how many ran)\n"
               "  -c N_CTX   tokens the context holds, 1 to %d; 0 or absent = prompt + N + 1\n"
               "  -f FILE    read the prompt from a file (at most %zu MiB)\n"
               "  --prune    %s\n"
               "  --prune-param  a pruning parameter (--list-methods), e.g. keep=0.2, layer=12, pool=max\n"
               "  -v         print what the pruning policy did\n"
               "  --chat     format PROMPT as a user turn with the model's chat template\n"
               "  --chat-template-kwargs JSON  variables the chat template reads (--chat, --messages, -i),\n"
               "             e.g. '{\"enable_thinking\": false}': Qwen3 and SmolLM3 answer without reasoning first\n"
               "  --messages FILE  the prompt is a conversation: a JSON array of messages as transformers\n"
               "             takes them (role, content, an assistant's tool_calls, a tool's tool_call_id),\n"
               "             formatted with the model's chat template, the assistant's turn opened\n"
               "  --reply-json  (--messages, --chat) print the answer once it ends, as one JSON message:\n"
               "             its reasoning and tool calls read out as the model's template writes them\n"
               "             (wt_chat_parse_reply), ready to append to the conversation; a reply\n"
               "             that does not end within -n tokens, or is stopped, is an error\n"
               "  --stop TEXT  an answer ends before TEXT, which is not printed (given again: the\n"
               "             first of them the answer completes); in -i the context forgets the\n"
               "             tokens past the answer kept\n"
               "  -i         chat: a turn per line, answers streamed, the context kept across turns\n"
               "             (-n: most tokens per answer; -c: default the training context up to\n"
               "             4096); /reset starts over, Ctrl-C stops an answer, Ctrl-D or /quit ends;\n"
               "             a template (or --chat-template-kwargs) that cannot format a first turn\n"
               "             stops it before the context is made\n"
               "  --prompt-cache FILE  restore the prompt's context from FILE when FILE holds this\n"
               "             model's context of this prompt or of its beginning, else prefill and\n"
               "             save it there (-v: the state's size and the KV bytes it holds)\n"
               "  --f32-activations  no rounding below f32: the CPU's matmuls without int8\n"
               "             activations, CUDA's prompts off tensor cores (TF32, f16); slower\n"
               "  --backend  where the weights live and the model runs (default cpu); vulkan\n"
               "             always uses f32 activations\n"
               "  --kv-type  the KV cache's type (default f16: half the KV's memory of f32, and of\n"
               "             what decode reads per token; q8_0 keeps 0.27 of it)\n"
               "  --batch-rows N  prompt rows that go through the model at once (default 0: %d);\n"
               "             the activations are planned for this many rows, not n_ctx (a\n"
               "             pruned prompt's x, k and v for all of them; --ffn-rows: the same)\n"
               "  --memory-budget MIB  the most MiB the context may allocate (default 0: the\n"
               "             memory available); with the default --batch-rows the prompt runs\n"
               "             fewer rows at once where 2048 would not fit\n"
               "  --temp 0   greedy decoding (the default); above 0: top-k 40, top-p 0.95, min-p 0 (off)\n"
               "  --repeat-penalty R  the tokens among the last --repeat-last-n (default 64; the\n"
               "             prompt's count) have their logits above 0 divided by R, the others\n"
               "             multiplied, greedy too (default 1: off; 1.1 is common);\n"
               "             --frequency-penalty F and --presence-penalty P subtract F per\n"
               "             occurrence and P once (default 0)\n"
               "%s",
               argv0, argv0, argv0, argv0, kMaxContext, wt_tools::kMaxThreads, kMaxContext, kMaxPromptFileBytes >> 20,
               wt_tools::prune_method_list().c_str(), WT_BATCH_ROWS_DEFAULT, wt_tools::kRopeFlagsUsage);
}

bool parse_args(int argc, char** argv, Options* o, Action* action) {
  *action = Action::run;
  wt_tools::Flags f(argc, argv);
  while (f.next()) {
    if (f.is("-m", "--model")) {
      if (!f.text(&o->model)) return false;
    } else if (f.is("-p", "--prompt")) {
      if (!f.text(&o->prompt)) return false;
      o->prompt_source = "-p";
      o->messages = false;
    } else if (f.is("--system")) {
      if (!f.text(&o->system)) return false;
    } else if (f.is("-f", "--file") || f.is("--messages")) {  // the last prompt source counts
      const std::string flag = f.flag() == "--file" ? "-f" : f.flag();
      const char* v = nullptr;
      if (!f.text(&v) || !read_prompt_file(flag, v, &o->prompt)) return false;
      o->prompt_source = flag + " " + v;
      o->messages = flag == "--messages";
      // The library reads the conversation as C text: a NUL would end it silently.
      if (o->messages && o->prompt.find('\0') != std::string::npos)
        return wt_tools::Flags::fail(std::string("--messages ") + v + " holds a NUL byte: JSON text has none");
    } else if (f.is("--prune")) {
      if (!f.text(&o->prune_method)) return false;
    } else if (f.is("--prune-param")) {
      std::pair<std::string, std::string> kv;
      if (!f.key_value(&kv)) return false;
      o->prune_params.push_back(kv);
    } else if (f.is("-v", "--verbose")) {
      o->verbose = true;
    } else if (f.is("--backend")) {
      if (!f.backend(&o->backend)) return false;
    } else if (f.is("--kv-type")) {
      if (!f.kv_type(&o->kv_type)) return false;
    } else if (wt_tools::is_rope_flag(f.flag())) {
      if (!f.rope(&o->load)) return false;
    } else if (f.is("--batch-rows") || f.is("--ffn-rows")) {
      if (!f.whole(0, kMaxContext, &o->n_batch_rows)) return false;
    } else if (f.is("--memory-budget")) {
      if (!f.whole(0, 1 << 24, &o->memory_budget_mib)) return false;
    } else if (f.is("--chat")) {
      o->chat = true;
    } else if (f.is("--chat-template-kwargs")) {
      if (!f.text(&o->chat_vars)) return false;
    } else if (f.is("--reply-json")) {
      o->reply_json = true;
    } else if (f.is("--stop")) {
      std::string stop;
      if (!f.text(&stop)) return false;
      if (stop.empty()) return wt_tools::Flags::fail("--stop needs a text to stop at (an empty one would stop at once)");
      o->stops.push_back(std::move(stop));
    } else if (f.is("-i", "--interactive")) {
      o->interactive = true;
    } else if (f.is("--prompt-cache")) {
      if (!f.text(&o->prompt_cache)) return false;
      if (o->prompt_cache.empty()) return wt_tools::Flags::fail("--prompt-cache needs a file name");
    } else if (f.is("--f32-activations")) {
      o->f32_activations = true;
    } else if (f.is("-n", "--n-predict")) {
      if (!f.whole(0, kMaxContext, &o->n_predict)) return false;
    } else if (f.is("-t", "--threads")) {
      if (!f.whole(0, wt_tools::kMaxThreads, &o->n_threads)) return false;
    } else if (f.is("-c", "--ctx")) {
      if (!f.whole(0, kMaxContext, &o->n_ctx)) return false;
    } else if (f.is("--temp")) {
      if (!finite_number(f, &o->temp)) return false;
    } else if (f.is("--top-k")) {
      if (!f.whole(0, INT32_MAX, &o->top_k)) return false;
    } else if (f.is("--top-p")) {
      if (!finite_number(f, &o->top_p)) return false;
      if (!(o->top_p > 0 && o->top_p <= 1)) return wt_tools::Flags::fail("--top-p must be in (0, 1] (1 is off)");
    } else if (f.is("--min-p")) {
      if (!finite_number(f, &o->min_p)) return false;
      if (!(o->min_p >= 0 && o->min_p <= 1)) return wt_tools::Flags::fail("--min-p must be in [0, 1] (0 is off)");
    } else if (f.is("--repeat-penalty")) {
      if (!finite_number(f, &o->repeat_penalty)) return false;
      if (!(o->repeat_penalty > 0)) return wt_tools::Flags::fail("--repeat-penalty must be > 0 (1 is off)");
    } else if (f.is("--repeat-last-n")) {
      if (!f.whole(0, kMaxContext, &o->repeat_last_n)) return false;
    } else if (f.is("--frequency-penalty")) {
      if (!finite_number(f, &o->frequency_penalty)) return false;
    } else if (f.is("--presence-penalty")) {
      if (!finite_number(f, &o->presence_penalty)) return false;
    } else if (f.is("--seed")) {
      if (!seed_number(f, &o->seed)) return false;
    } else if (f.is("--list-methods")) {
      *action = Action::list_methods;
      return true;
    } else if (f.is("-h", "--help")) {
      *action = Action::help;
      return true;
    } else {
      return wt_tools::Flags::fail("unknown argument '" + f.flag() + "'");
    }
  }
  if (o->model.empty()) return wt_tools::Flags::fail("-m MODEL is required");
  if (std::string error; !wt_tools::check_rope_flags(o->load, &error)) return wt_tools::Flags::fail(error);
  if (o->interactive && !o->prompt_cache.empty())
    return wt_tools::Flags::fail("--prompt-cache is for one prompt, not -i (a chat keeps its context while it runs)");
  if (o->messages && (o->chat || o->interactive || !o->system.empty()))
    return wt_tools::Flags::fail("--messages is a whole conversation for the chat template: not with --chat, -i or "
                                 "--system (put a system message in the file)");
  if (o->reply_json && (o->interactive || (!o->chat && !o->messages)))
    return wt_tools::Flags::fail("--reply-json is for --chat or --messages (a reply is read as the chat template writes it)");
  if (o->reply_json && o->n_predict == 0)
    return wt_tools::Flags::fail("--reply-json needs -n above 0: only a reply that ends is read");
  if (!o->chat_vars.empty() && !o->chat && !o->interactive && !o->messages)
    return wt_tools::Flags::fail("--chat-template-kwargs is for --chat, --messages or -i (a plain prompt has no template)");
  if (o->prompt_source.empty() && !o->interactive)
    return wt_tools::Flags::fail("a prompt is required: -p PROMPT, -f FILE or --messages FILE (or -i to chat)");
  if (!o->prompt_source.empty() && o->prompt.empty()) {
    return wt_tools::Flags::fail(o->prompt_source == "-p" ? "-p is empty: the prompt needs at least one character"
                                                          : o->prompt_source + " is empty: the prompt needs at least one character");
  }
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0 && static_cast<unsigned>(o->n_threads) > cores) {
    std::fprintf(stderr,
                 "warning: -t %d is more threads than this machine's %u cores: ops run on fewer once the "
                 "workers are seen waiting for cores (-t 0 uses all cores)\n",
                 o->n_threads, cores);
  }
  return true;
}

}  // namespace wt_run

// whittle-run: load a model, run a prompt, stream the answer, report speed.
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
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
#include "whittle.h"

namespace {

// The most a context holds (wt_context_params.n_ctx), so the most -c and -n can ask for.
constexpr int kMaxContext = 1 << 20;
// A prompt file past this is refused before it is read whole: 16 MiB of text is millions of
// tokens, more than any context holds (and /dev/zero never ends).
constexpr size_t kMaxPromptFileBytes = size_t{16} << 20;
// The most CPU workers a context takes (wt_context_create refuses more).
constexpr int kMaxThreads = 1024;

struct Options {
  std::string model;
  std::string prompt;
  std::string prompt_source;  // "-p" or "-f FILE": where the prompt came from, for errors
  bool chat = false;
  std::string system;
  int n_predict = 128;
  int n_threads = 0;
  int n_ctx = 0;
  float temp = 0.0f;
  int top_k = 40;
  float top_p = 0.95f;
  unsigned long long seed = 0;
  bool f32_activations = false;
  std::string prune_method = "full";
  std::vector<std::pair<std::string, std::string>> prune_params;
  bool verbose = false;
  wt_backend_kind backend = WT_BACKEND_CPU;
};

void usage(FILE* out, const char* argv0) {
  std::fprintf(out,
               "usage: %s -m MODEL -p PROMPT [--chat] [--system TEXT] [-n N] [-t THREADS] [-c N_CTX]\n"
               "          [--temp T] [--top-k K] [--top-p P] [--seed S] [--f32-activations]\n"
               "          [-f PROMPT_FILE] [--prune METHOD] [--prune-param KEY=VALUE]... [-v]\n"
               "          [--backend cpu|vulkan|cuda]\n"
               "       %s --list-methods   (the methods and their parameters, as a markdown table)\n"
               "  -n N       most tokens to generate, 0 to %d (default 128)\n"
               "  -t N       CPU worker threads, 0 to %d; 0 = all cores (default)\n"
               "  -c N_CTX   tokens the context holds, 1 to %d; 0 or absent = prompt + N + 1\n"
               "  -f FILE    read the prompt from a file (at most %zu MiB)\n"
               "  --prune    %s\n"
               "  --prune-param  a pruning parameter (--list-methods), e.g. keep=0.2, layer=12, pool=max\n"
               "  -v         print what the pruning policy did\n"
               "  --chat     format PROMPT as a user turn with the model's chat template\n"
               "  --f32-activations  matmuls without int8 activation rounding (slower)\n"
               "  --backend  where the weights live and the model runs (default cpu); vulkan and\n"
               "             cuda always use f32 activations\n"
               "  --temp 0   greedy decoding (the default)\n",
               argv0, argv0, kMaxContext, kMaxThreads, kMaxContext, kMaxPromptFileBytes >> 20,
               wt_tools::prune_method_list().c_str());
}

// Reads -f's file into *out, refusing a directory, a read error and a file larger than
// kMaxPromptFileBytes (a device such as /dev/zero included) with what went wrong.
bool read_prompt_file(const char* path, std::string* out) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return wt_tools::Flags::fail(std::string("-f ") + path + " is a directory");
  FILE* file = std::fopen(path, "rb");
  if (!file) return wt_tools::Flags::fail(std::string("-f cannot open ") + path + ": " + std::strerror(errno));
  std::vector<char> chunk(65536);
  out->clear();
  size_t got = 0;
  while ((got = std::fread(chunk.data(), 1, chunk.size(), file)) > 0) {
    if (out->size() + got > kMaxPromptFileBytes) {
      std::fclose(file);
      return wt_tools::Flags::fail(std::string("-f ") + path + " is larger than " +
                                   std::to_string(kMaxPromptFileBytes >> 20) + " MiB, more than any context holds");
    }
    out->append(chunk.data(), got);
  }
  const bool read_failed = std::ferror(file) != 0;
  const int read_errno = errno;
  std::fclose(file);
  if (read_failed) return wt_tools::Flags::fail(std::string("-f cannot read ") + path + ": " + std::strerror(read_errno));
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

bool parse_args(int argc, char** argv, Options* o, bool* help) {
  wt_tools::Flags f(argc, argv);
  while (f.next()) {
    if (f.is("-m", "--model")) {
      if (!f.text(&o->model)) return false;
    } else if (f.is("-p", "--prompt")) {
      if (!f.text(&o->prompt)) return false;
      o->prompt_source = "-p";
    } else if (f.is("--system")) {
      if (!f.text(&o->system)) return false;
    } else if (f.is("-f", "--file")) {
      const char* v = nullptr;
      if (!f.text(&v) || !read_prompt_file(v, &o->prompt)) return false;
      o->prompt_source = std::string("-f ") + v;
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
    } else if (f.is("--chat")) {
      o->chat = true;
    } else if (f.is("--f32-activations")) {
      o->f32_activations = true;
    } else if (f.is("-n", "--n-predict")) {
      if (!f.whole(0, kMaxContext, &o->n_predict)) return false;
    } else if (f.is("-t", "--threads")) {
      if (!f.whole(0, kMaxThreads, &o->n_threads)) return false;
    } else if (f.is("-c", "--ctx")) {
      if (!f.whole(0, kMaxContext, &o->n_ctx)) return false;
    } else if (f.is("--temp")) {
      if (!finite_number(f, &o->temp)) return false;
    } else if (f.is("--top-k")) {
      if (!f.whole(0, INT32_MAX, &o->top_k)) return false;
    } else if (f.is("--top-p")) {
      if (!finite_number(f, &o->top_p)) return false;
      if (!(o->top_p > 0 && o->top_p <= 1)) return wt_tools::Flags::fail("--top-p must be in (0, 1] (1 is off)");
    } else if (f.is("--seed")) {
      if (!seed_number(f, &o->seed)) return false;
    } else if (f.is("--list-methods")) {
      wt_tools::print_prune_methods(stdout);
      std::exit(0);
    } else if (f.is("-h", "--help")) {
      *help = true;
      return true;
    } else {
      return wt_tools::Flags::fail("unknown argument '" + f.flag() + "'");
    }
  }
  if (o->model.empty()) return wt_tools::Flags::fail("-m MODEL is required");
  if (o->prompt_source.empty()) return wt_tools::Flags::fail("a prompt is required: -p PROMPT or -f FILE");
  if (o->prompt.empty()) {
    return wt_tools::Flags::fail(o->prompt_source == "-p" ? "-p is empty: the prompt needs at least one character"
                                                          : o->prompt_source + " is empty: the prompt needs at least one character");
  }
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0 && static_cast<unsigned>(o->n_threads) > cores) {
    std::fprintf(stderr,
                 "warning: -t %d is more threads than this machine's %u cores: the workers wait on each other, "
                 "which can be many times slower (-t 0 uses all cores)\n",
                 o->n_threads, cores);
  }
  return true;
}

int fail(const char* what, wt_status st, const char* detail) {
  std::fprintf(stderr, "error: %s: %s: %s\n", what, wt_status_string(st), detail);
  return 1;
}
// wt_last_error() is the detail of this thread's last failed call: read it before any other call.
int fail(const char* what, wt_status st) { return fail(what, st, wt_last_error()); }

struct StreamState {
  wt_detokenizer* detok;
  std::vector<char> buf;
  const wt_model* model;
};

// Ctrl-C: a long prefill stops at its next layer (wt_context_abort), generation after the
// current token; a second Ctrl-C ends the process the default way.
std::atomic<wt_context*> g_ctx{nullptr};
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_sigint(int) {
  g_interrupted = 1;
  if (wt_context* c = g_ctx.load()) wt_context_abort(c);
  std::signal(SIGINT, SIG_DFL);
}

bool on_token(wt_token token, void* user) {
  StreamState* s = static_cast<StreamState*>(user);
  if (g_interrupted || wt_token_is_end(s->model, token)) return false;
  size_t len = 0;
  if (wt_detokenizer_push(s->detok, token, s->buf.data(), s->buf.size(), &len) == WT_OK) {
    std::fwrite(s->buf.data(), 1, len, stdout);
    std::fflush(stdout);
  }
  return true;
}

void print_prune_stats(const wt_context* ctx) {
  wt_prune_stats ps;
  if (wt_context_get_prune_stats(ctx, &ps) != WT_OK) return;
  std::fprintf(stderr, "\nprune %s: prompt %d tokens, ", wt_prune_method_name(ps.method), ps.n_prompt);
  if (ps.selection_layer >= 0) {
    std::fprintf(stderr, "selection at layer %d (%s), %d rows kept\n", ps.selection_layer,
                 ps.triggered ? "triggered" : "forced, never triggered", ps.n_selected);
  } else if (ps.method == WT_PRUNE_ASL) {
    std::fprintf(stderr, "ASL never triggered: no token selection\n");
  } else {
    std::fprintf(stderr, "%d rows kept\n", ps.n_selected);
  }
  std::fprintf(stderr, "  layer  rows  kv_rows  kv_bytes\n");
  uint64_t total = 0;
  for (int32_t l = 0; l < ps.n_layer; ++l) {
    std::fprintf(stderr, "  %5d %5d %8d %9llu\n", l, ps.hidden_rows[l], ps.kv_rows[l],
                 static_cast<unsigned long long>(ps.kv_bytes[l]));
    total += ps.kv_bytes[l];
  }
  std::fprintf(stderr, "  KV total %llu bytes; attention skipped for %lld (token, layer) pairs; %d block swaps\n",
               static_cast<unsigned long long>(total), static_cast<long long>(ps.n_attention_skipped), ps.n_block_swaps);
  std::fprintf(stderr, "  time: prefill %.1f ms (first pass %.1f ms, scoring %.1f ms)\n", ps.prefill_ms, ps.pass1_ms,
               ps.score_ms);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool help = false;
  if (!parse_args(argc, argv, &o, &help)) {
    usage(stderr, argv[0]);
    return 2;
  }
  if (help) {
    usage(stdout, argv[0]);
    return 0;
  }

  wt_model* model = nullptr;
  wt_model_params mp = wt_model_default_params();
  mp.backend = o.backend;
  wt_status st = wt_model_load(o.model.c_str(), &mp, &model);
  if (st != WT_OK) return fail("loading the model", st);

  std::string text = o.prompt;
  wt_tokenize_params tp = wt_tokenize_default_params();
  if (o.chat) {
    std::vector<wt_chat_message> msgs;
    if (!o.system.empty()) msgs.push_back({"system", o.system.c_str()});
    msgs.push_back({"user", o.prompt.c_str()});
    size_t len = 0;
    std::vector<char> buf(o.prompt.size() + o.system.size() + 1024);
    st = wt_chat_apply(model, msgs.data(), msgs.size(), true, buf.data(), buf.size(), &len);
    if (st == WT_ERR_BUFFER_TOO_SMALL) {
      buf.resize(len + 1);
      st = wt_chat_apply(model, msgs.data(), msgs.size(), true, buf.data(), buf.size(), &len);
    }
    if (st != WT_OK) return fail("applying the chat template", st);
    text.assign(buf.data(), len);
    tp.parse_special = true;
  }

  size_t n_tokens = 0;
  std::vector<wt_token> tokens(text.size() + 16);
  st = wt_tokenize(model, text.data(), text.size(), &tp, tokens.data(), tokens.size(), &n_tokens);
  if (st != WT_OK) return fail("tokenizing the prompt", st);
  tokens.resize(n_tokens);

  wt_context_params cp = wt_context_default_params();
  cp.n_threads = o.n_threads;
  cp.matmul_mode = o.f32_activations ? WT_MATMUL_F32 : WT_MATMUL_FAST;
  cp.n_ctx = o.n_ctx > 0 ? o.n_ctx : static_cast<int>(n_tokens) + o.n_predict + 1;
  st = wt_prune_method_from_name(o.prune_method.c_str(), &cp.prune.method);
  if (st != WT_OK) return fail("--prune", st);
  for (const auto& kv : o.prune_params) {
    st = wt_prune_set_param(&cp.prune, kv.first.c_str(), kv.second.c_str());
    if (st != WT_OK) return fail("--prune-param", st);
  }
  if (cp.prune.method == WT_PRUNE_ORACLE) cp.n_ctx += cp.prune.oracle_tokens;
  // Beyond the training context the library runs (whittle.h, n_ctx), but the positions there
  // were never trained: say so rather than let the answers degrade unexplained.
  wt_model_info info{};
  if (wt_model_get_info(model, &info) == WT_OK && info.n_ctx_train > 0 && cp.n_ctx > info.n_ctx_train)
    std::fprintf(stderr,
                 "warning: the context holds %d tokens, more than the model's training context (%d): positions "
                 "past it were never trained and the output may degrade\n",
                 cp.n_ctx, info.n_ctx_train);
  wt_context* ctx = nullptr;
  st = wt_context_create(model, &cp, &ctx);
  if (st != WT_OK) return fail("creating the context", st);

  wt_sampler_params sp = wt_sampler_default_params();
  sp.temperature = o.temp;
  sp.top_k = o.top_k;
  sp.top_p = o.top_p;
  sp.seed = o.seed;
  wt_sampler* sampler = nullptr;
  st = wt_sampler_create(model, &sp, &sampler);
  if (st != WT_OK) return fail("creating the sampler", st);

  g_ctx.store(ctx);
  std::signal(SIGINT, on_sigint);
  st = wt_context_prefill(ctx, tokens.data(), tokens.size());
  if (st != WT_OK) return fail("prefill", st);

  StreamState stream{nullptr, std::vector<char>(4096), model};
  st = wt_detokenizer_create(model, &stream.detok);
  if (st != WT_OK) return fail("creating the detokenizer", st);
  int32_t n_generated = 0;
  st = wt_generate(ctx, sampler, o.n_predict, on_token, &stream, &n_generated);
  const std::string generate_error = st != WT_OK ? wt_last_error() : "";  // before the flush resets it
  size_t len = 0;
  if (wt_detokenizer_flush(stream.detok, stream.buf.data(), stream.buf.size(), &len) == WT_OK)
    std::fwrite(stream.buf.data(), 1, len, stdout);
  std::printf("\n");
  if (st != WT_OK) return fail("generation", st, generate_error.c_str());

  if (o.verbose && cp.prune.method != WT_PRUNE_FULL) print_prune_stats(ctx);

  wt_context_stats stats;
  if (wt_context_get_stats(ctx, &stats) == WT_OK) {
    const double pp = stats.prefill_ms > 0 ? 1000.0 * stats.n_prefill_tokens / stats.prefill_ms : 0;
    const double tg = stats.decode_ms > 0 ? 1000.0 * stats.n_decode_tokens / stats.decode_ms : 0;
    std::fprintf(stderr, "\nprefill: %d tokens in %.1f ms = %.1f tok/s\n", stats.n_prefill_tokens, stats.prefill_ms, pp);
    std::fprintf(stderr, "decode:  %d tokens in %.1f ms = %.1f tok/s\n", stats.n_decode_tokens, stats.decode_ms, tg);
  }
  wt_detokenizer_free(stream.detok);
  wt_sampler_free(sampler);
  std::signal(SIGINT, SIG_DFL);
  g_ctx.store(nullptr);
  wt_context_free(ctx);
  wt_model_free(model);
  return 0;
}

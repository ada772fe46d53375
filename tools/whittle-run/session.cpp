// whittle-run's shared pieces (session.h).
#include "session.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <thread>

namespace wt_run {

namespace {

std::atomic<wt_context*> g_ctx{nullptr};
std::atomic<bool> g_in_prefill{false};
volatile std::sig_atomic_t g_interrupted = 0;
volatile std::sig_atomic_t g_once = 0;

extern "C" void on_sigint(int) {
  g_interrupted = 1;
  if (g_in_prefill.load()) {
    if (wt_context* c = g_ctx.load()) wt_context_abort(c);
  }
  if (g_once) std::signal(SIGINT, SIG_DFL);
}

}  // namespace

int fail(const char* what, wt_status st, const char* detail) {
  std::fprintf(stderr, "error: %s: %s: %s\n", what, wt_status_string(st), detail);
  return 1;
}
int fail(const char* what, wt_status st) { return fail(what, st, wt_last_error()); }

void install_sigint(wt_context* ctx, bool once) {
  g_ctx.store(ctx);
  g_once = once ? 1 : 0;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a read of the chat's input returns, interrupted
  sigaction(SIGINT, &sa, nullptr);
}
void remove_sigint() {
  std::signal(SIGINT, SIG_DFL);
  g_ctx.store(nullptr);
}
bool interrupted() { return g_interrupted != 0; }
void clear_interrupted() { g_interrupted = 0; }
void set_in_prefill(bool on) { g_in_prefill.store(on); }

TokenStream::TokenStream(const wt_model* m, const std::vector<std::string>* stop_texts)
    : model(m), buf(4096), stops(stop_texts) {
  if (wt_detokenizer_create(model, &detok) != WT_OK) detok = nullptr;
}
TokenStream::~TokenStream() { wt_detokenizer_free(detok); }

void TokenStream::flush() {
  size_t len = 0;
  // After a stop text the rest is not the answer's.
  if (!stopped && wt_detokenizer_flush(detok, buf.data(), buf.size(), &len) == WT_OK) text.append(buf.data(), len);
  if (!stopped) show(true);
  std::fflush(stdout);
}

bool TokenStream::show(bool all) {
  size_t end = text.size();
  // A stop text begins at or after `shown`: no byte that might begin one is printed.
  if (stops) {
    for (const std::string& stop : *stops) {
      const size_t at = text.find(stop, shown);
      if (at < end) end = at, stopped = true;
    }
  }
  if (stopped) {
    text.resize(end);
  } else if (!all && stops) {
    size_t hold = 0;  // the longest end of the text that begins a stop text
    for (const std::string& stop : *stops)
      for (size_t k = std::min(stop.size() - 1, text.size() - shown); k > hold; --k)
        if (text.compare(text.size() - k, k, stop, 0, k) == 0) {
          hold = k;
          break;
        }
    end -= hold;
  }
  if (!quiet) {
    std::fwrite(text.data() + shown, 1, end - shown, stdout);
    std::fflush(stdout);
  }
  shown = end;
  return !stopped;
}

bool on_token(wt_token token, void* user) {
  TokenStream* s = static_cast<TokenStream*>(user);
  s->tokens.push_back(token);
  if (interrupted() || wt_token_is_end(s->model, token)) return false;
  size_t len = 0;
  if (wt_detokenizer_push(s->detok, token, s->buf.data(), s->buf.size(), &len) == WT_OK)
    s->text.append(s->buf.data(), len);
  return s->show(false);
}

namespace {

// A chat call into a buffer sized from a guess, once more at the size it asks for; `what`
// names the step in the error message.
template <typename Call>
bool call_sized(const char* what, size_t guess, std::string* out, Call call) {
  std::vector<char> buf(guess);
  size_t len = 0;
  wt_status st = call(buf.data(), buf.size(), &len);
  if (st == WT_ERR_BUFFER_TOO_SMALL) {
    buf.resize(len + 1);
    st = call(buf.data(), buf.size(), &len);
  }
  if (st != WT_OK) {
    fail(what, st);
    return false;
  }
  out->assign(buf.data(), len);
  return true;
}

}  // namespace

bool apply_chat(const wt_model* model, const std::vector<std::pair<std::string, std::string>>& msgs, bool add_assistant,
                const std::string& vars, std::string* out) {
  std::vector<wt_chat_message> m;
  size_t chars = 0;
  for (const auto& [role, content] : msgs) {
    m.push_back({role.c_str(), content.c_str()});
    chars += content.size();
  }
  return call_sized("applying the chat template", chars + 256 * (msgs.size() + 1), out, [&](char* buf, size_t cap, size_t* len) {
    return wt_chat_apply_vars(model, m.data(), m.size(), add_assistant, vars.c_str(), buf, cap, len);
  });
}

bool apply_chat_json(const wt_model* model, const std::string& messages, const std::string& vars, std::string* out) {
  return call_sized("applying the chat template", messages.size() + 4096, out, [&](char* buf, size_t cap, size_t* len) {
    return wt_chat_apply_json(model, messages.c_str(), true, vars.c_str(), buf, cap, len);
  });
}

bool parse_reply(const wt_model* model, const std::string& reply, std::string* out) {
  // The library reads C text: a NUL (a byte token the model sampled) would end it silently.
  if (const size_t nul = reply.find('\0'); nul != std::string::npos) {
    std::fprintf(stderr, "error: reading the reply: it holds a NUL byte at byte %zu\n", nul);
    return false;
  }
  return call_sized("reading the reply", reply.size() + 256, out, [&](char* buf, size_t cap, size_t* len) {
    return wt_chat_parse_reply(model, reply.c_str(), buf, cap, len);
  });
}

std::vector<std::pair<std::string, std::string>> first_turn(const Options& o, const std::string& user) {
  std::vector<std::pair<std::string, std::string>> msgs;
  if (!o.system.empty()) msgs.emplace_back("system", o.system);
  msgs.emplace_back("user", user);
  return msgs;
}

bool tokenize(const wt_model* model, const std::string& text, bool special, std::vector<wt_token>* out) {
  wt_tokenize_params tp = wt_tokenize_default_params();
  tp.parse_special = special;
  size_t n = 0;
  out->assign(text.size() + 16, 0);
  const wt_status st = wt_tokenize(model, text.data(), text.size(), &tp, out->data(), out->size(), &n);
  if (st != WT_OK) {
    fail("tokenizing", st);
    return false;
  }
  out->resize(n);
  return true;
}

uint64_t kv_bytes_held(const Session& s) {
  wt_model_info info{};
  if (wt_model_get_info(s.model, &info) != WT_OK) return 0;
  uint64_t total = 0;
  for (int32_t l = 0; l < info.n_layer; ++l) {
    uint64_t dev = 0, host = 0;
    if (wt_context_get_kv_residency(s.ctx, l, &dev, &host) != WT_OK) return 0;
    // The pager keeps a row on the host and, while resident, a copy on the device: count
    // each row once (the host holds every row where there is a host pool).
    total += host > 0 ? host : dev;
  }
  return total;
}

std::string kept_summary(const Session& s) {
  wt_prune_stats ps;
  if (s.cp.prune.method == WT_PRUNE_FULL || wt_context_get_prune_stats(s.ctx, &ps) != WT_OK || ps.n_layer <= 0)
    return std::string("prune ") + wt_prune_method_name(s.cp.prune.method) + " keeps the KV of every token";
  long long rows = 0;
  for (int32_t l = 0; l < ps.n_layer; ++l) rows += ps.kv_rows[l];
  char line[256];
  std::snprintf(line, sizeof line, "prune %s keeps %.0f of the prompt's %d tokens' KV rows per layer on average",
                wt_prune_method_name(ps.method), static_cast<double>(rows) / ps.n_layer, ps.n_prompt);
  return line;
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

void print_speed(const wt_context* ctx, int32_t n_threads) {
  wt_context_stats stats;
  if (wt_context_get_stats(ctx, &stats) != WT_OK) return;
  const double pp = stats.prefill_ms > 0 ? 1000.0 * stats.n_prefill_tokens / stats.prefill_ms : 0;
  const double tg = stats.decode_ms > 0 ? 1000.0 * stats.n_decode_tokens / stats.decode_ms : 0;
  std::fprintf(stderr, "prefill: %d tokens in %.1f ms = %.1f tok/s\n", stats.n_prefill_tokens, stats.prefill_ms, pp);
  std::fprintf(stderr, "decode:  %d tokens in %.1f ms = %.1f tok/s\n", stats.n_decode_tokens, stats.decode_ms, tg);
  // The CPU ran ops on fewer workers than asked where other threads held the cores.
  const unsigned asked = n_threads > 0 ? static_cast<unsigned>(n_threads) : std::thread::hardware_concurrency();
  if (stats.threads_per_op > 0 && stats.threads_per_op < asked - 0.05)
    std::fprintf(stderr, "cpu:     %.1f workers per op of %u (the others waited for cores other threads held)\n",
                 stats.threads_per_op, asked);
}

}  // namespace wt_run

// whittle-run: load a model, run a prompt, stream the answer, report speed.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "tools/common/prune_methods.h"
#include "whittle.h"

namespace {

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
  wt_run::Options o;
  wt_run::Action action = wt_run::Action::run;
  if (!wt_run::parse_args(argc, argv, &o, &action)) {
    wt_run::usage(stderr, argv[0]);
    return 2;
  }
  if (action == wt_run::Action::help) {
    wt_run::usage(stdout, argv[0]);
    return 0;
  }
  if (action == wt_run::Action::list_methods) {
    wt_tools::print_prune_methods(stdout);
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
  cp.kv_type = o.kv_type;
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

// whittle-run: load a model, then answer one prompt (streamed, with speed figures), or chat
// on the terminal (-i, chat_loop.cpp). --prompt-cache keeps a prompt's context on disk.
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "chat_loop.h"
#include "prompt_cache.h"
#include "session.h"
#include "tools/common/prune_methods.h"
#include "whittle.h"

namespace {

using wt_run::fail;
using wt_run::Session;

// The one-shot run: tokens are the whole prompt.
int run_once(Session& s, const std::vector<wt_token>& tokens) {
  const wt_run::Options& o = s.o;
  wt_run::install_sigint(s.ctx, true);
  size_t n_cached = 0;
  if (!o.prompt_cache.empty()) {
    const wt_run::CacheRestore r = wt_run::restore_prompt_cache(s.ctx, o.prompt_cache, tokens);
    n_cached = r.n_reused;
    if (n_cached > 0)
      std::fprintf(stderr, "prompt cache: %zu of the prompt's %zu tokens restored from %s\n", n_cached, tokens.size(),
                   o.prompt_cache.c_str());
    else
      std::fprintf(stderr, "prompt cache: %s not used (%s): prefilling the prompt\n", o.prompt_cache.c_str(),
                   r.why_not.c_str());
  }
  if (n_cached < tokens.size()) {
    wt_run::set_in_prefill(true);
    const wt_status st = wt_context_prefill(s.ctx, tokens.data() + n_cached, tokens.size() - n_cached);
    wt_run::set_in_prefill(false);
    if (st != WT_OK) return fail("prefill", st);
    if (!o.prompt_cache.empty()) {
      size_t state_bytes = 0;
      std::string error;
      const wt_status cs = wt_run::save_prompt_cache(s.ctx, o.prompt_cache, tokens, &state_bytes, &error);
      if (cs != WT_OK) {
        std::fprintf(stderr, "warning: prompt cache: not saved: %s: %s\n", wt_status_string(cs), error.c_str());
      } else {
        std::fprintf(stderr, "prompt cache: saved %s\n", o.prompt_cache.c_str());
        if (o.verbose) {
          const uint64_t kv = wt_run::kv_bytes_held(s);
          std::fprintf(stderr, "prompt cache: state %zu bytes, KV held %llu bytes (state / KV %.3f); %s\n",
                       state_bytes, static_cast<unsigned long long>(kv),
                       kv > 0 ? static_cast<double>(state_bytes) / static_cast<double>(kv) : 0.0,
                       wt_run::kept_summary(s).c_str());
        }
      }
    }
  }

  // The prompt counts for the repetition penalties, as the answer's own tokens do.
  if (const wt_status as = wt_sampler_accept(s.sampler, tokens.data(), tokens.size()); as != WT_OK)
    return fail("giving the prompt to the sampler", as);
  wt_run::TokenStream stream(s.model, &o.stops);
  if (!stream.ok()) return fail("creating the detokenizer", WT_ERR_OUT_OF_MEMORY, "");
  stream.quiet = o.reply_json;  // printed once read back, below
  int32_t n_generated = 0;
  const wt_status st = wt_generate(s.ctx, s.sampler, o.n_predict, wt_run::on_token, &stream, &n_generated);
  const std::string generate_error = st != WT_OK ? wt_last_error() : "";  // before the flush resets it
  stream.flush();
  if (o.reply_json) {
    // Only a whole reply is read: one that failed, was stopped or ran out of -n tokens would
    // read as a complete message (a call cut short, an answer half said). Its text goes to
    // stderr then.
    const bool ended = stream.stopped || (!stream.tokens.empty() && wt_token_is_end(s.model, stream.tokens.back()));
    std::string message;
    const char* why = st != WT_OK ? "generation failed"  // a reply that ended stands, Ctrl-C after it or not
                      : ended      ? nullptr
                      : wt_run::interrupted() ? "stopped (Ctrl-C)"
                                              : "the reply did not end within -n tokens";
    if (why) std::fprintf(stderr, "error: --reply-json: %s: the reply is not read\n", why);
    if (why || !wt_run::parse_reply(s.model, stream.text, &message)) {
      std::fputs("the reply was:\n", stderr);
      std::fwrite(stream.text.data(), 1, stream.text.size(), stderr);
      std::fputs("\n", stderr);
      if (st != WT_OK) return fail("generation", st, generate_error.c_str());
      return 1;
    }
    std::fputs(message.c_str(), stdout);
  }
  std::printf("\n");
  if (st != WT_OK) return fail("generation", st, generate_error.c_str());
  if (o.verbose && s.cp.prune.method != WT_PRUNE_FULL) wt_run::print_prune_stats(s.ctx);
  std::fprintf(stderr, "\n");
  wt_run::print_speed(s.ctx, s.cp.n_threads);
  wt_run::remove_sigint();
  return 0;
}

// The context: n_ctx from -c, else the prompt and -n (one-shot) or the model's training
// context up to 4096 (chat); the pruning method and parameters from --prune*.
int make_context(Session& s, size_t n_prompt) {
  const wt_run::Options& o = s.o;
  wt_context_params& cp = s.cp;
  cp = wt_context_default_params();
  cp.n_threads = o.n_threads;
  cp.matmul_mode = o.f32_activations ? WT_MATMUL_F32 : WT_MATMUL_FAST;
  cp.kv_type = o.kv_type;
  cp.n_batch_rows = o.n_batch_rows;
  cp.memory_budget_bytes = static_cast<uint64_t>(o.memory_budget_mib) << 20;
  wt_model_info info{};
  const bool have_info = wt_model_get_info(s.model, &info) == WT_OK;
  if (o.n_ctx > 0)
    cp.n_ctx = o.n_ctx;
  else if (o.interactive)
    cp.n_ctx = have_info && info.n_ctx_train > 0 && info.n_ctx_train < 4096 ? info.n_ctx_train : 4096;
  else
    cp.n_ctx = static_cast<int>(n_prompt) + o.n_predict + 1;
  wt_status st = wt_prune_method_from_name(o.prune_method.c_str(), &cp.prune.method);
  if (st != WT_OK) return fail("--prune", st);
  for (const auto& kv : o.prune_params) {
    st = wt_prune_set_param(&cp.prune, kv.first.c_str(), kv.second.c_str());
    if (st != WT_OK) return fail("--prune-param", st);
  }
  if (cp.prune.method == WT_PRUNE_ORACLE) cp.n_ctx += cp.prune.oracle_tokens;
  // Beyond the training context the library runs (whittle.h, n_ctx), but the positions there
  // were never trained: say so rather than let the answers degrade unexplained.
  if (have_info && info.n_ctx_train > 0 && cp.n_ctx > info.n_ctx_train)
    std::fprintf(stderr,
                 "warning: the context holds %d tokens, more than the model's training context (%d): positions "
                 "past it were never trained and the output may degrade\n",
                 cp.n_ctx, info.n_ctx_train);
  st = wt_context_create(s.model, &cp, &s.ctx);
  if (st != WT_OK) return fail("creating the context", st);
  return 0;
}

int run(Session& s) {
  const wt_run::Options& o = s.o;
  wt_model_params mp = o.load;
  mp.backend = o.backend;
  wt_status st = wt_model_load(o.model.c_str(), &mp, &s.model);
  if (st != WT_OK) return fail("loading the model", st);

  std::vector<wt_token> tokens;
  if (!o.interactive) {
    std::string text = o.prompt;
    if (o.chat && !wt_run::apply_chat(s.model, wt_run::first_turn(o, o.prompt), true, o.chat_vars, &text)) return 1;
    if (o.messages && !wt_run::apply_chat_json(s.model, o.prompt, o.chat_vars, &text)) return 1;
    if (!wt_run::tokenize(s.model, text, o.chat || o.messages, &tokens)) return 1;
  } else {
    // A template, or variables, that cannot format a first turn would fail every turn: say so
    // before the context is made.
    std::string text;
    if (!wt_run::apply_chat(s.model, wt_run::first_turn(o, "Hi"), true, o.chat_vars, &text)) return 1;
  }
  if (const int rc = make_context(s, tokens.size())) return rc;

  wt_sampler_params sp = wt_sampler_default_params();
  sp.temperature = o.temp;
  sp.top_k = o.top_k;
  sp.top_p = o.top_p;
  sp.min_p = o.min_p;
  sp.repeat_penalty = o.repeat_penalty;
  sp.frequency_penalty = o.frequency_penalty;
  sp.presence_penalty = o.presence_penalty;
  sp.penalty_last_n = o.repeat_last_n;
  sp.seed = o.seed;
  st = wt_sampler_create(s.model, &sp, &s.sampler);
  if (st != WT_OK) return fail("creating the sampler", st);
  return o.interactive ? wt_run::run_chat(s) : run_once(s, tokens);
}

}  // namespace

int main(int argc, char** argv) {
  Session s;
  wt_run::Action action = wt_run::Action::run;
  if (!wt_run::parse_args(argc, argv, &s.o, &action)) {
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
  const int rc = run(s);
  wt_sampler_free(s.sampler);
  wt_context_free(s.ctx);
  wt_model_free(s.model);
  return rc;
}

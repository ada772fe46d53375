// fuzz_state's contexts (state_setup.h).
#include "state_setup.h"

#include "fuzz_support.h"

namespace wt::fuzz {

namespace {

struct Kind {
  const char* name;
  wt_prune_method method;
  wt_kv_type kv;
};

StateSetup make() {
  StateSetup s;
  const test::TinyModelOptions mo = test::fuzz_model_options(64);  // head_dim 32: q8_0 KV stores blocks of 32
  s.model = load_model_bytes(test::make_tiny_llama(mo).build(), "state");
  const Kind kinds[] = {{"full_f32", WT_PRUNE_FULL, WT_KV_F32},   {"full_f16", WT_PRUNE_FULL, WT_KV_F16},
                        {"full_q8_0", WT_PRUNE_FULL, WT_KV_Q8_0}, {"snapkv", WT_PRUNE_SNAPKV, WT_KV_F32},
                        {"sliminfer", WT_PRUNE_SLIMINFER, WT_KV_F32}, {"token_filter", WT_PRUNE_TOKENFILTER, WT_KV_F32}};
  std::vector<wt_token> prompt(16);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<wt_token>(1 + (i * 37) % 200);
  for (const Kind& k : kinds) {
    wt_context_params cp = wt_context_default_params();
    cp.n_threads = 1;
    cp.n_ctx = 128;
    cp.kv_type = k.kv;
    cp.prune.method = k.method;
    wt_context* ctx = nullptr;
    if (wt_context_create(s.model, &cp, &ctx) != WT_OK) fail("state setup: %s: %s", k.name, wt_last_error());
    if (wt_context_prefill(ctx, prompt.data(), prompt.size()) != WT_OK ||
        wt_context_decode(ctx, 5) != WT_OK || wt_context_decode(ctx, 9) != WT_OK)
      fail("state setup: %s: %s", k.name, wt_last_error());
    size_t n = 0;
    if (wt_context_state_size(ctx, &n) != WT_OK) fail("state setup: size: %s", wt_last_error());
    std::vector<uint8_t> bytes(n);
    size_t written = 0;
    if (wt_context_state_save(ctx, bytes.data(), bytes.size(), &written) != WT_OK || written != n)
      fail("state setup: save: %s", wt_last_error());
    s.contexts.push_back(ctx);
    s.states.push_back(std::move(bytes));
    s.names.push_back(k.name);
  }
  return s;
}

}  // namespace

StateSetup::~StateSetup() {
  for (wt_context* c : contexts) wt_context_free(c);
  wt_model_free(model);
}

StateSetup& state_setup() {
  static StateSetup s = make();  // lives as long as the process
  return s;
}

}  // namespace wt::fuzz

// The ranking tap (wt_context_get_token_ranking): its statuses and lifetime on a tiny
// synthetic model; on the real model, for every method, that recording changes nothing the
// method computes, which tokens each row ranks, and that the tokens each method kept are the
// top of the ranking it recorded (read back from the KV positions the engine kept, an
// independent fact).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "runtime/api/handles.h"
#include "support/gguf_writer.h"
#include "support/real_model.h"
#include "whittle.h"

namespace {

using Positions = std::set<int32_t>;

// A 4-layer random model with one KV head by default, so that SnapKV's per-KV-head choice
// is the recorded (summed over KV heads) ranking itself.
struct TinyModel {
  wt::test::TempPath file{"ranking_tiny.gguf"};  // removed once the model is freed
  wt_model* model = nullptr;
  explicit TinyModel(int32_t n_head_kv = 1) {
    wt::test::TinyModelOptions o;
    o.n_layer = 4;
    o.n_head_kv = n_head_kv;
    REQUIRE(wt::test::write_file(file.path(), wt::test::make_tiny_llama(o).build()));
    REQUIRE_MESSAGE(wt_model_load(file.path().c_str(), nullptr, &model) == WT_OK, wt_last_error());
  }
  ~TinyModel() { wt_model_free(model); }
};

std::vector<wt_token> byte_tokens(int32_t n) {
  std::vector<wt_token> t(static_cast<size_t>(n));
  uint32_t x = 12345;
  for (wt_token& v : t) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<wt_token>((x >> 16) % 256);
  }
  return t;
}

wt_prune_params params(wt_prune_method m, float keep, int32_t record) {
  wt_prune_params p = wt_prune_default_params();
  p.method = m;
  p.keep = keep;
  p.record_ranking = record;
  return p;
}

wt_context* make_ctx(const wt_model* model, const wt_prune_params& pp, int32_t n_ctx) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = n_ctx;
  cp.n_threads = 2;
  cp.prune = pp;
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(model, &cp, &ctx) == WT_OK, wt_last_error());
  return ctx;
}

void prefill(wt_context* ctx, const std::vector<wt_token>& prompt) {
  REQUIRE_MESSAGE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
}

// A copy of row `layer` (-1: final); its length must be the prompt's.
std::vector<float> ranking(const wt_context* ctx, int32_t layer, size_t n_prompt) {
  const float* s = nullptr;
  int32_t n = 0;
  REQUIRE_MESSAGE(wt_context_get_token_ranking(ctx, layer, &s, &n) == WT_OK, wt_last_error());
  REQUIRE(static_cast<size_t>(n) == n_prompt);
  return {s, s + n};
}

bool error_mentions(const char* text) { return std::string(wt_last_error()).find(text) != std::string::npos; }

Positions finite(const std::vector<float>& r) {
  Positions out;
  for (size_t j = 0; j < r.size(); ++j)
    if (std::isfinite(r[j])) out.insert(static_cast<int32_t>(j));
  return out;
}

Positions range(int32_t begin, int32_t end) {
  Positions out;
  for (int32_t j = begin; j < end; ++j) out.insert(j);
  return out;
}

Positions minus(const Positions& a, const Positions& b) {
  Positions out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

// The KV positions layer l keeps for KV head h (for every head, when the method's rows are
// shared).
Positions kv_set(const wt_context* ctx, int32_t l, int32_t h = 0) {
  const wt::Context& c = *ctx->ctx;
  const int32_t* pos = c.kv_positions(l, h);
  return Positions(pos, pos + c.kv_len(l));
}

// The k best of `among` by r (value descending, ties to the lower position: the topk op's
// rule).
Positions top(const std::vector<float>& r, const Positions& among, size_t k) {
  std::vector<int32_t> order(among.begin(), among.end());
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return r[a] > r[b]; });
  order.resize(std::min(k, order.size()));
  return Positions(order.begin(), order.end());
}

// Every kept token ranks at least as high as every dropped one.
void check_kept_outrank_dropped(const std::vector<float>& r, const Positions& kept, const Positions& dropped) {
  REQUIRE(!kept.empty());
  REQUIRE(!dropped.empty());
  float lowest_kept = INFINITY, highest_dropped = -INFINITY;
  for (int32_t j : kept) lowest_kept = std::min(lowest_kept, r[j]);
  for (int32_t j : dropped) highest_dropped = std::max(highest_dropped, r[j]);
  CHECK(lowest_kept >= highest_dropped);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> last_logits(const wt_context* ctx) {
  const float* l = nullptr;
  REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
  return {l, l + ctx->owner->model->hp.n_vocab};
}

}  // namespace

TEST_CASE("prune ranking: statuses, lifetime and the record_ranking parameter") {
  TinyModel tiny;
  const std::vector<wt_token> prompt = byte_tokens(200);
  const float* s = nullptr;
  int32_t n = 0;

  wt_prune_params p = params(WT_PRUNE_SNAPKV, 0.2f, 0);
  REQUIRE(wt_prune_set_param(&p, "record_ranking", "1") == WT_OK);
  CHECK(p.record_ranking == 1);
  CHECK(wt_prune_set_param(&p, "record_ranking", "yes") == WT_ERR_INVALID_ARGUMENT);
  p.record_ranking = 2;
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 256;
  cp.prune = p;
  wt_context* refused = nullptr;
  CHECK(wt_context_create(tiny.model, &cp, &refused) == WT_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions("prune.record_ranking"));
  CHECK(refused == nullptr);

  SUBCASE("recording off, or no method to record") {
    for (const wt_prune_params& off : {params(WT_PRUNE_SNAPKV, 0.2f, 0), params(WT_PRUNE_FULL, 0.2f, 1)}) {
      wt_context* ctx = make_ctx(tiny.model, off, 256);
      prefill(ctx, prompt);
      CHECK(wt_context_get_token_ranking(ctx, -1, &s, &n) == WT_ERR_INVALID_ARGUMENT);
      CHECK(error_mentions("prune.record_ranking = 1"));
      wt_context_free(ctx);
    }
  }

  SUBCASE("arguments, and a ranking that lives from a pruned prefill to the next reset") {
    wt_context* ctx = make_ctx(tiny.model, params(WT_PRUNE_SNAPKV, 0.2f, 1), 256);
    CHECK(wt_context_get_token_ranking(ctx, -1, &s, &n) == WT_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("no pruned prefill"));
    prefill(ctx, prompt);
    CHECK(wt_context_get_token_ranking(nullptr, -1, &s, &n) == WT_ERR_INVALID_ARGUMENT);
    CHECK(wt_context_get_token_ranking(ctx, -1, nullptr, &n) == WT_ERR_INVALID_ARGUMENT);
    CHECK(wt_context_get_token_ranking(ctx, -1, &s, nullptr) == WT_ERR_INVALID_ARGUMENT);
    CHECK(wt_context_get_token_ranking(ctx, -2, &s, &n) == WT_ERR_INVALID_ARGUMENT);
    CHECK(wt_context_get_token_ranking(ctx, 4, &s, &n) == WT_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("outside [-1, 4)"));
    REQUIRE(wt_context_get_token_ranking(ctx, 3, &s, &n) == WT_OK);
    CHECK(n == 200);
    const std::vector<float> before = ranking(ctx, -1, prompt.size());
    // Decodes and appended prefills are not the prompt: the ranking stays.
    REQUIRE(wt_context_decode(ctx, 42) == WT_OK);
    REQUIRE(wt_context_prefill(ctx, prompt.data(), 8) == WT_OK);
    CHECK(same_bits(ranking(ctx, -1, prompt.size()), before));
    wt_context_reset(ctx);
    CHECK(wt_context_get_token_ranking(ctx, -1, &s, &n) == WT_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("no pruned prefill"));
    prefill(ctx, prompt);
    CHECK(same_bits(ranking(ctx, -1, prompt.size()), before));
    wt_context_free(ctx);
  }

  SUBCASE("a prompt within the budget is ranked nowhere") {
    wt_context* ctx = make_ctx(tiny.model, params(WT_PRUNE_SNAPKV, 1.0f, 1), 256);
    prefill(ctx, prompt);
    for (int32_t l = -1; l < 4; ++l) CHECK(finite(ranking(ctx, l, prompt.size())).empty());
    wt_context_free(ctx);
  }
}

TEST_CASE("prune ranking: SnapKV's ranking at every layer is the KV it kept (one KV head)") {
  TinyModel tiny;
  const std::vector<wt_token> prompt = byte_tokens(200);
  const int32_t L = 200;
  wt_context* ctx = make_ctx(tiny.model, params(WT_PRUNE_SNAPKV, 0.2f, 1), 256);
  prefill(ctx, prompt);
  // The window is at most half the budget (here 20 of SnapKV's 32).
  const int32_t c = L / 5, w = std::min(ctx->ctx->prune_params().window, c / 2);
  const Positions prefix = range(0, L - w);
  for (int32_t l = 0; l < 4; ++l) {
    CAPTURE(l);
    const std::vector<float> r = ranking(ctx, l, prompt.size());
    CHECK(finite(r) == prefix);  // the window is never scored
    const Positions kept = kv_set(ctx, l);
    CHECK(kept.size() == static_cast<size_t>(c));
    CHECK(top(r, prefix, static_cast<size_t>(c - w)) == minus(kept, range(L - w, L)));
  }
  CHECK(same_bits(ranking(ctx, -1, prompt.size()), ranking(ctx, 3, prompt.size())));

  // The tap observes: the same logits without it.
  wt_context* plain = make_ctx(tiny.model, params(WT_PRUNE_SNAPKV, 0.2f, 0), 256);
  prefill(plain, prompt);
  CHECK(same_bits(last_logits(plain), last_logits(ctx)));
  wt_context_free(plain);
  wt_context_free(ctx);
}

// The C tap wt_context_get_kv_positions: statuses, a plain context's prompt and decode rows,
// SnapKV's per-KV-head rows, and GemFilter's re-indexed re-prefill reported at the original
// positions (the same tokens as GemFilter at original positions keeps, read independently).
std::vector<int32_t> kv_positions(const wt_context* ctx, int32_t l, int32_t h) {
  const int32_t* pos = nullptr;
  int32_t n = -1;
  REQUIRE_MESSAGE(wt_context_get_kv_positions(ctx, l, h, &pos, &n) == WT_OK, wt_last_error());
  REQUIRE(n >= 0);
  return n ? std::vector<int32_t>(pos, pos + n) : std::vector<int32_t>{};
}

TEST_CASE("kv positions tap: statuses, full KV, SnapKV per KV head, GemFilter re-indexed") {
  TinyModel tiny;
  const int32_t L = 200;
  const std::vector<wt_token> prompt = byte_tokens(L);
  const int32_t* pos = nullptr;
  int32_t n = 0;

  wt_context* full = make_ctx(tiny.model, params(WT_PRUNE_FULL, 1.0f, 0), 256);
  CHECK(kv_positions(full, 0, 0).empty());
  CHECK(wt_context_get_kv_positions(nullptr, 0, 0, &pos, &n) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_context_get_kv_positions(full, 0, 0, nullptr, &n) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_context_get_kv_positions(full, 0, 0, &pos, nullptr) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_context_get_kv_positions(full, 4, 0, &pos, &n) == WT_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions("layer 4 is outside [0, 4)"));
  CHECK(wt_context_get_kv_positions(full, 0, 1, &pos, &n) == WT_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions("kv_head 1 is outside [0, 1)"));
  CHECK(wt_context_get_kv_positions(full, -1, 0, &pos, &n) == WT_ERR_INVALID_ARGUMENT);
  prefill(full, prompt);
  REQUIRE(wt_context_decode(full, 42) == WT_OK);
  std::vector<int32_t> expect(static_cast<size_t>(L + 1));
  std::iota(expect.begin(), expect.end(), 0);
  for (int32_t l = 0; l < 4; ++l) CHECK(kv_positions(full, l, 0) == expect);
  wt_context_reset(full);
  CHECK(kv_positions(full, 3, 0).empty());
  wt_context_free(full);

  wt_context* snap = make_ctx(tiny.model, params(WT_PRUNE_SNAPKV, 0.2f, 0), 256);
  prefill(snap, prompt);
  for (int32_t l = 0; l < 4; ++l) {
    const std::vector<int32_t> p = kv_positions(snap, l, 0);
    CHECK(p.size() == static_cast<size_t>(L / 5));
    CHECK(Positions(p.begin(), p.end()) == kv_set(snap, l));
  }
  wt_context_free(snap);

  // GemFilter rotates its K tokens at 0..K-1 and decodes at K; the tap says which prompt
  // tokens they were, and puts the decoded token at L.
  wt_prune_params op = params(WT_PRUNE_GEMFILTER, 0.2f, 0);
  op.gemfilter_original_positions = true;
  wt_context* orig = make_ctx(tiny.model, op, 256);
  prefill(orig, prompt);
  const std::vector<int32_t> chosen = kv_positions(orig, 3, 0);
  REQUIRE(chosen.size() == static_cast<size_t>(L / 5));
  wt_context_free(orig);
  wt_context* gem = make_ctx(tiny.model, params(WT_PRUNE_GEMFILTER, 0.2f, 0), 256);
  prefill(gem, prompt);
  REQUIRE(wt_context_decode(gem, 42) == WT_OK);
  std::vector<int32_t> with_decode = chosen;
  with_decode.push_back(L);
  for (int32_t l = 0; l < 4; ++l) CHECK(kv_positions(gem, l, 0) == with_decode);
  wt_context_free(gem);
}

// KV positions are laid out by each layer's KV rows (the method's budget plus
// max_new_tokens), not n_ctx in every layer: a context sized by the plan reports the same
// positions for every layer and KV head, and computes the same logits, as one sized for
// n_ctx rows everywhere; and a state saved by the second loads into the first and goes on
// the same. Two KV heads (SnapKV chooses per head) and SlimInfer's layers of different sizes.
TEST_CASE("kv positions tap: a context sized by max_new_tokens gives the positions and logits of one sized by n_ctx") {
  const TinyModel tiny(2);
  const int32_t L = 200, n_new = 4;
  const std::vector<wt_token> prompt = byte_tokens(L);
  using Ctx = std::unique_ptr<wt_context, decltype(&wt_context_free)>;
  auto create = [&](wt_prune_method method, int32_t max_new) {
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = L + n_new;
    cp.n_threads = 2;
    cp.prune = params(method, 0.2f, 0);
    cp.max_new_tokens = max_new;
    wt_context* c = nullptr;
    REQUIRE_MESSAGE(wt_context_create(tiny.model, &cp, &c) == WT_OK, wt_last_error());
    return Ctx(c, wt_context_free);
  };
  auto same_logits = [](const wt_context* a, const wt_context* b) {
    const float* la = nullptr;
    const float* lb = nullptr;
    REQUIRE(wt_context_logits(a, -1, &la) == WT_OK);
    REQUIRE(wt_context_logits(b, -1, &lb) == WT_OK);
    return std::memcmp(la, lb, sizeof(float) * static_cast<size_t>(wt::test::kTinyVocab)) == 0;
  };
  auto same_positions = [](const wt_context* a, const wt_context* b) {
    bool same = true;
    for (int32_t l = 0; l < 4; ++l)
      for (int32_t h = 0; h < 2; ++h) same = same && kv_positions(a, l, h) == kv_positions(b, l, h);
    return same;
  };
  for (const wt_prune_method method : {WT_PRUNE_SNAPKV, WT_PRUNE_SLIMINFER, WT_PRUNE_FASTKV}) {
    CAPTURE(std::string(wt_prune_method_name(method)));
    const Ctx whole = create(method, 0), sized = create(method, n_new);
    for (wt_context* c : {whole.get(), sized.get()}) {
      prefill(c, prompt);
      for (wt_token t = 40; t < 40 + n_new - 1; ++t) REQUIRE_MESSAGE(wt_context_decode(c, t) == WT_OK, wt_last_error());
    }
    // The sized context's KV is smaller (else this case would test nothing).
    wt_context_stats st[2] = {};
    REQUIRE(wt_context_get_stats(whole.get(), &st[0]) == WT_OK);
    REQUIRE(wt_context_get_stats(sized.get(), &st[1]) == WT_OK);
    CHECK(st[1].kv_bytes < st[0].kv_bytes);
    for (int32_t l = 0; l < 4; ++l) {
      for (int32_t h = 0; h < 2; ++h) {
        CAPTURE(l);
        CAPTURE(h);
        const std::vector<int32_t> p = kv_positions(sized.get(), l, h);
        CHECK(p == kv_positions(whole.get(), l, h));
        CHECK(std::set<int32_t>(p.begin(), p.end()).size() == p.size());
      }
    }
    CHECK(same_logits(whole.get(), sized.get()));
    // The whole context's state into a sized one: the positions land in its layout, and the
    // next step is the sized context's.
    size_t n_bytes = 0;
    REQUIRE(wt_context_state_size(whole.get(), &n_bytes) == WT_OK);
    std::vector<unsigned char> state(n_bytes);
    REQUIRE_MESSAGE(wt_context_state_save(whole.get(), state.data(), state.size(), &n_bytes) == WT_OK, wt_last_error());
    const Ctx loaded = create(method, n_new);
    REQUIRE_MESSAGE(wt_context_state_load(loaded.get(), state.data(), n_bytes) == WT_OK, wt_last_error());
    CHECK(same_positions(loaded.get(), sized.get()));
    for (wt_context* c : {sized.get(), loaded.get()}) REQUIRE_MESSAGE(wt_context_decode(c, 99) == WT_OK, wt_last_error());
    CHECK(same_positions(loaded.get(), sized.get()));
    CHECK(same_logits(loaded.get(), sized.get()));
  }
}

// The C tap wt_context_get_attended_rows: statuses (recording off, no decode step yet, a
// prefill after one), decode_topk's rows (whole blocks of the prompt up to the budget,
// ascending, then every generated row), every row where a method chooses none (SnapKV at
// decode; decode_topk whose budget covers the prompt), and that recording changes nothing.
std::vector<int32_t> attended(const wt_context* ctx, int32_t l) {
  const int32_t* rows = nullptr;
  int32_t n = -1;
  REQUIRE_MESSAGE(wt_context_get_attended_rows(ctx, l, &rows, &n) == WT_OK, wt_last_error());
  REQUIRE(n >= 0);
  return std::vector<int32_t>(rows, rows + n);
}

// decode_topk with the exact scores (decode_topk_bounds = 0) over blocks of 8.
wt_prune_params decode_topk(float keep, int32_t record) {
  wt_prune_params p = params(WT_PRUNE_FULL, keep, record);
  REQUIRE(wt_prune_set_param(&p, "method", "decode_topk") == WT_OK);
  REQUIRE(wt_prune_set_param(&p, "decode_topk_block", "8") == WT_OK);
  REQUIRE(wt_prune_set_param(&p, "decode_topk_bounds", "0") == WT_OK);
  return p;
}

// decode_topk's attended rows of one layer after decode step `step`: kb whole blocks of B
// prompt rows (the last block has L % B rows), ascending, then the step + 1 generated rows.
void check_whole_blocks(const std::vector<int32_t>& r, int32_t L, int32_t B, int32_t kb, int32_t step) {
  CHECK(std::is_sorted(r.begin(), r.end()));
  CHECK(std::adjacent_find(r.begin(), r.end()) == r.end());
  std::set<int32_t> blocks;
  size_t i = 0;
  for (; i < r.size() && r[i] < L; ++i) blocks.insert(r[i] / B);
  CHECK(blocks.size() == static_cast<size_t>(kb));
  size_t rows = 0;
  for (int32_t b : blocks) rows += static_cast<size_t>(std::min(L, (b + 1) * B) - b * B);
  CHECK(i == rows);
  REQUIRE(r.size() == i + static_cast<size_t>(step + 1));
  for (int32_t t = 0; t <= step; ++t) CHECK(r[i + static_cast<size_t>(t)] == L + t);
}

TEST_CASE("attended rows tap: statuses, decode_topk's blocks, every row without a choice") {
  TinyModel tiny;
  const int32_t L = 203, B = 8;  // 26 blocks, the last one of 3 rows
  const std::vector<wt_token> prompt = byte_tokens(L);
  const int32_t* rows = nullptr;
  int32_t n = 0;

  wt_context* off = make_ctx(tiny.model, decode_topk(0.2f, 0), 256);
  prefill(off, prompt);
  REQUIRE(wt_context_decode(off, 42) == WT_OK);
  CHECK(wt_context_get_attended_rows(off, 0, &rows, &n) == WT_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions("prune.record_ranking = 1"));

  wt_context* ctx = make_ctx(tiny.model, decode_topk(0.2f, 1), 256);
  CHECK(wt_context_get_attended_rows(nullptr, 0, &rows, &n) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_context_get_attended_rows(ctx, 0, nullptr, &n) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_context_get_attended_rows(ctx, 0, &rows, nullptr) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_context_get_attended_rows(ctx, 4, &rows, &n) == WT_ERR_INVALID_ARGUMENT);
  CHECK(error_mentions("layer 4 is outside [0, 4)"));
  CHECK(wt_context_get_attended_rows(ctx, -1, &rows, &n) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_context_get_attended_rows(ctx, 0, &rows, &n) == WT_ERR_INVALID_ARGUMENT);  // nothing ran
  prefill(ctx, prompt);
  CHECK(wt_context_get_attended_rows(ctx, 0, &rows, &n) == WT_ERR_INVALID_ARGUMENT);  // a prefill
  CHECK(error_mentions("not a decode step"));
  const int32_t kb = static_cast<int32_t>(0.2f * static_cast<float>(L)) / B;  // 40 rows: 5 blocks
  for (int32_t step = 0; step < 3; ++step) {
    REQUIRE(wt_context_decode(ctx, 42 + step) == WT_OK);
    for (int32_t l = 0; l < 4; ++l) {
      CAPTURE(step);
      CAPTURE(l);
      check_whole_blocks(attended(ctx, l), L, B, kb, step);
    }
  }
  wt_context_reset(ctx);
  CHECK(wt_context_get_attended_rows(ctx, 0, &rows, &n) == WT_ERR_INVALID_ARGUMENT);
  wt_context_free(ctx);
  wt_context_free(off);

  // Recording changes nothing: the logits after the same steps, bit for bit.
  wt_context* a = make_ctx(tiny.model, decode_topk(0.2f, 1), 256);
  wt_context* b = make_ctx(tiny.model, decode_topk(0.2f, 0), 256);
  prefill(a, prompt);
  prefill(b, prompt);
  for (wt_token t : {7, 99, 200}) {
    REQUIRE(wt_context_decode(a, t) == WT_OK);
    REQUIRE(wt_context_decode(b, t) == WT_OK);
    CHECK(same_bits(last_logits(a), last_logits(b)));
  }
  wt_context_free(a);
  wt_context_free(b);

  // No choice at decode: every row the layer holds, in order (SnapKV keeps L / 5 rows).
  std::vector<wt_context*> none = {make_ctx(tiny.model, params(WT_PRUNE_SNAPKV, 0.2f, 1), 256),
                                   make_ctx(tiny.model, decode_topk(1.0f, 1), 256)};
  for (wt_context* c : none) {
    prefill(c, prompt);
    REQUIRE(wt_context_decode(c, 42) == WT_OK);
    for (int32_t l = 0; l < 4; ++l) {
      const int32_t held = static_cast<int32_t>(kv_positions(c, l, 0).size());
      std::vector<int32_t> expect(static_cast<size_t>(held));
      std::iota(expect.begin(), expect.end(), 0);
      CHECK(attended(c, l) == expect);
    }
    wt_context_free(c);
  }
}

// decode_topk_dense_layers = N (Quest leaves its first two layers dense): layers 0..N-1
// attend every row at each step, the later layers whole blocks, with exact scores and with
// the bounds.
TEST_CASE("decode_topk_dense_layers: the first layers attend every row and the rest choose blocks") {
  TinyModel tiny;
  const int32_t L = 203, B = 8;
  const int32_t kb = static_cast<int32_t>(0.2f * static_cast<float>(L)) / B;
  const std::vector<wt_token> prompt = byte_tokens(L);
  for (const char* bounds : {"0", "1"}) {
    CAPTURE(std::string(bounds));
    wt_prune_params p = decode_topk(0.2f, 1);
    REQUIRE(wt_prune_set_param(&p, "decode_topk_dense_layers", "2") == WT_OK);
    REQUIRE(wt_prune_set_param(&p, "decode_topk_bounds", bounds) == WT_OK);
    wt_context* ctx = make_ctx(tiny.model, p, 256);
    prefill(ctx, prompt);
    for (int32_t step = 0; step < 2; ++step) {
      REQUIRE(wt_context_decode(ctx, 42 + step) == WT_OK);
      for (int32_t l = 0; l < 4; ++l) {
        CAPTURE(step);
        CAPTURE(l);
        if (l < 2) {
          std::vector<int32_t> every(static_cast<size_t>(L + step + 1));
          std::iota(every.begin(), every.end(), 0);
          CHECK(attended(ctx, l) == every);
        } else {
          check_whole_blocks(attended(ctx, l), L, B, kb, step);
        }
      }
    }
    wt_context_free(ctx);
  }
  // The dense layers never ask for key bounds, so the plan holds none for them: one layer's
  // bounds are ceil(256 / 8) blocks x 1 KV head x 2 x head_dim 16 halves (f16). With every layer
  // dense (8 > 4) none are planned, and decoding still works.
  auto arena = [&](const char* dense) {
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = 256;
    cp.prune = decode_topk(0.2f, 0);
    REQUIRE(wt_prune_set_param(&cp.prune, "decode_topk_bounds", "1") == WT_OK);
    REQUIRE(wt_prune_set_param(&cp.prune, "decode_topk_dense_layers", dense) == WT_OK);
    wt_context_plan_info info{};
    info.struct_size = sizeof info;
    REQUIRE(wt_context_plan(tiny.model, &cp, &info) == WT_OK);
    return static_cast<int64_t>(info.arena_bytes);
  };
  const int64_t layer_bounds = 32 * 1 * 2 * 16 * static_cast<int64_t>(sizeof(uint16_t));
  CHECK(arena("0") - arena("2") == 2 * layer_bounds);
  CHECK(arena("0") - arena("8") == 4 * layer_bounds);
  wt_prune_params all_dense = decode_topk(0.2f, 1);
  REQUIRE(wt_prune_set_param(&all_dense, "decode_topk_bounds", "1") == WT_OK);
  REQUIRE(wt_prune_set_param(&all_dense, "decode_topk_dense_layers", "8") == WT_OK);
  wt_context* ctx = make_ctx(tiny.model, all_dense, 256);
  prefill(ctx, prompt);
  REQUIRE(wt_context_decode(ctx, 42) == WT_OK);
  std::vector<int32_t> every(static_cast<size_t>(L + 1));
  std::iota(every.begin(), every.end(), 0);
  CHECK(attended(ctx, 3) == every);
  wt_context_free(ctx);
}

// decode_topk_bounds = 1 (Quest's key bounds): the same shape of choice (kb whole blocks,
// then the generated rows), unchanged by where the KV lives and by the context's history: a
// reset and the same prompt, a state saved and loaded into a context that had decoded after
// another prompt (the bounds are rebuilt from the loaded keys), the copying pager with a
// quarter of the blocks, all give the resident context's logits bit for bit. How well the bounds choose is the NumPy reference's
// and the bench's to say (docs/results/fidelity-*.md).
TEST_CASE("decode_topk with key bounds: whole blocks, the same logits after a reset, a state load and in the pager") {
  TinyModel tiny;
  const int32_t L = 203, B = 8;
  const std::vector<wt_token> prompt = byte_tokens(L);
  const std::vector<wt_token> steps = {42, 7, 99, 200};
  auto bounds_params = [](int32_t record) {
    wt_prune_params p = decode_topk(0.2f, record);
    REQUIRE(wt_prune_set_param(&p, "decode_topk_bounds", "1") == WT_OK);
    return p;
  };
  auto run = [&](wt_context* c, bool fresh) {
    if (fresh) prefill(c, prompt);
    std::vector<std::vector<float>> out;
    for (wt_token t : steps) {
      REQUIRE(wt_context_decode(c, t) == WT_OK);
      out.push_back(last_logits(c));
    }
    return out;
  };
  wt_context* ctx = make_ctx(tiny.model, bounds_params(1), 256);
  prefill(ctx, prompt);
  const int32_t kb = static_cast<int32_t>(0.2f * static_cast<float>(L)) / B;
  std::vector<std::vector<float>> ref;
  for (size_t step = 0; step < steps.size(); ++step) {
    REQUIRE(wt_context_decode(ctx, steps[step]) == WT_OK);
    ref.push_back(last_logits(ctx));
    for (int32_t l = 0; l < 4; ++l) {
      CAPTURE(step);
      CAPTURE(l);
      check_whole_blocks(attended(ctx, l), L, B, kb, static_cast<int32_t>(step));
    }
  }
  // The bounds choose differently from the exact scores somewhere, or the test would not
  // tell the two apart (the tiny model's random weights give loose bounds).
  wt_context* exact = make_ctx(tiny.model, decode_topk(0.2f, 0), 256);
  CHECK_FALSE(run(exact, true) == ref);
  wt_context_free(exact);

  wt_context_reset(ctx);
  CHECK(run(ctx, true) == ref);

  // Saved after the prompt, loaded into a fresh context.
  wt_context_reset(ctx);
  prefill(ctx, prompt);
  size_t bytes = 0;
  REQUIRE(wt_context_state_size(ctx, &bytes) == WT_OK);
  std::vector<char> state(bytes);
  REQUIRE(wt_context_state_save(ctx, state.data(), state.size(), &bytes) == WT_OK);
  // The loading context has run another prompt of the same length, its bounds built by a
  // decode step: the load must drop them (stale bounds would choose other blocks).
  wt_context* loaded = make_ctx(tiny.model, bounds_params(1), 256);
  std::vector<wt_token> other = prompt;
  std::reverse(other.begin(), other.end());
  prefill(loaded, other);
  REQUIRE(wt_context_decode(loaded, steps[0]) == WT_OK);
  REQUIRE_MESSAGE(wt_context_state_load(loaded, state.data(), bytes) == WT_OK, wt_last_error());
  CHECK(run(loaded, false) == ref);
  wt_context_free(loaded);

  // The copying pager, a quarter of the blocks on the device.
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 256;
  cp.n_threads = 2;
  cp.prune = bounds_params(0);
  cp.kv_block_tokens = 16;
  cp.kv_device_blocks = 4 * (256 / 16) / 4;
  cp.kv_pager_flags = WT_KV_PAGER_COPY;
  wt_context* paged = nullptr;
  REQUIRE_MESSAGE(wt_context_create(tiny.model, &cp, &paged) == WT_OK, wt_last_error());
  CHECK(run(paged, true) == ref);
  wt_context_free(paged);
  wt_context_free(ctx);
}

// Label long: five minutes under ASan, where every method's host code already runs in the
// allocation and full-budget tests; the Release stage runs it (qemu leaves long and model out).
TEST_CASE("prune ranking: every method on the real model (600 tokens at 20% keep)" * doctest::test_suite("long")) {
  if (!wt::test::have_real_model()) return;
  const int32_t L = 600, n_ctx = 700;
  const std::vector<wt_token> prompt = wt::test::real_model().prompt(static_cast<size_t>(L));
  const wt_model* model = wt::test::real_model().model;
  const int32_t n_layer = model->model->hp.n_layer;
  const wt_prune_method methods[] = {WT_PRUNE_STREAMING, WT_PRUNE_SNAPKV,    WT_PRUNE_FASTKV,
                                     WT_PRUNE_GEMFILTER, WT_PRUNE_ASL,       WT_PRUNE_CLAA,
                                     WT_PRUNE_SLIMINFER, WT_PRUNE_TOKENFILTER, WT_PRUNE_ORACLE};
  for (wt_prune_method m : methods) {
    const std::string method = wt_prune_method_name(m);
    CAPTURE(method);
    wt_context* ctx = make_ctx(model, params(m, 0.2f, 1), n_ctx);
    prefill(ctx, prompt);
    wt_context* plain = make_ctx(model, params(m, 0.2f, 0), n_ctx);
    prefill(plain, prompt);
    CHECK(same_bits(last_logits(plain), last_logits(ctx)));
    CHECK(wt_context_n_past(plain) == wt_context_n_past(ctx));
    wt_context_free(plain);

    const wt_prune_params& rp = ctx->ctx->prune_params();
    wt_prune_stats st;
    REQUIRE(wt_context_get_prune_stats(ctx, &st) == WT_OK);
    std::vector<std::vector<float>> rows;
    for (int32_t l = 0; l < n_layer; ++l) rows.push_back(ranking(ctx, l, prompt.size()));
    const std::vector<float> final_row = ranking(ctx, -1, prompt.size());
    const int32_t w = rp.window, sel = st.selection_layer;
    const Positions all = range(0, L), prefix = range(0, L - w), window = range(L - w, L);
    auto nan_layers = [&]() {
      int32_t n = 0;
      for (const std::vector<float>& r : rows) n += finite(r).empty() ? 1 : 0;
      return n;
    };

    switch (m) {
      case WT_PRUNE_STREAMING: {
        CHECK(nan_layers() == n_layer);  // nothing is scored
        CHECK(finite(final_row) == all);
        // Sinks first, then the most recent: exactly the KV every layer kept.
        std::vector<int32_t> order(static_cast<size_t>(L));
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return final_row[a] > final_row[b]; });
        for (int32_t i = 0; i < rp.n_sink; ++i) CHECK(order[static_cast<size_t>(i)] == i);
        CHECK(order[static_cast<size_t>(rp.n_sink)] == L - 1);
        CHECK(top(final_row, all, static_cast<size_t>(st.kv_rows[0])) == kv_set(ctx, 0));
        break;
      }
      case WT_PRUNE_SNAPKV:
        for (const std::vector<float>& r : rows) CHECK(finite(r) == prefix);
        CHECK(same_bits(final_row, rows.back()));
        break;
      case WT_PRUNE_FASTKV: {
        REQUIRE(sel == rp.layer);
        CHECK(finite(final_row) == prefix);
        CHECK(same_bits(final_row, rows[static_cast<size_t>(sel)]));
        // After the selection only the kept rows are scored (the window never is).
        const Positions kept = finite(rows[static_cast<size_t>(sel + 1)]);
        CHECK(kept.size() == static_cast<size_t>(st.n_selected - w));
        check_kept_outrank_dropped(final_row, kept, minus(prefix, kept));
        break;
      }
      case WT_PRUNE_CLAA: {
        REQUIRE(sel == rp.layer);
        CHECK(finite(final_row) == prefix);
        CHECK(same_bits(final_row, rows[static_cast<size_t>(sel)]));  // the aggregate it selected by
        for (int32_t l = 0; l < rp.claa_min_layer && l <= sel - rp.claa_n_layers; ++l)
          CHECK(finite(rows[static_cast<size_t>(l)]).empty());  // full KV, no aggregate yet
        // The kept rows fit the budget after the selection: every layer keeps them whole.
        const Positions kept = minus(kv_set(ctx, sel + 1), window);
        CHECK(kept.size() == static_cast<size_t>(st.n_selected - w));
        check_kept_outrank_dropped(final_row, kept, minus(prefix, kept));
        break;
      }
      case WT_PRUNE_ASL: {
        CHECK(finite(final_row) == prefix);
        if (sel < 0) CHECK(same_bits(final_row, rows.back()));  // no selection: the last layer's
        // A selection forced at a layer (whether or not the test fired on this prompt): the
        // ranking up to it is the same, and the kept rows are the top of the selecting layer's.
        wt_prune_params fp = params(m, 0.2f, 1);
        fp.asl_max_layer = 2 * n_layer / 3;
        wt_context* forced = make_ctx(model, fp, n_ctx);
        prefill(forced, prompt);
        wt_prune_stats fst;
        REQUIRE(wt_context_get_prune_stats(forced, &fst) == WT_OK);
        const int32_t fsel = fst.selection_layer;
        REQUIRE(fsel >= 0);
        REQUIRE(fsel < n_layer - 1);
        const std::vector<float> forced_final = ranking(forced, -1, prompt.size());
        CHECK(same_bits(forced_final, ranking(forced, fsel, prompt.size())));
        CHECK(same_bits(ranking(forced, 0, prompt.size()), rows[0]));
        const Positions kept = minus(kv_set(forced, fsel + 1), window);
        CHECK(kept.size() == static_cast<size_t>(fst.n_selected - w));
        check_kept_outrank_dropped(forced_final, kept, minus(prefix, kept));
        wt_context_free(forced);
        break;
      }
      case WT_PRUNE_GEMFILTER: {
        // The default scores by the window, as SnapKV: the prefix before it.
        CHECK(finite(final_row) == prefix);
        CHECK(same_bits(final_row, rows[static_cast<size_t>(sel)]));
        CHECK(nan_layers() == n_layer - 1);
        // At original positions the re-prefilled tokens are readable: the top K - W of the
        // ranking, which re-indexing does not change, and the window.
        wt_prune_params op = params(m, 0.2f, 1);
        op.gemfilter_original_positions = true;
        wt_context* orig = make_ctx(model, op, n_ctx);
        prefill(orig, prompt);
        const std::vector<float> orig_final = ranking(orig, -1, prompt.size());
        CHECK(same_bits(orig_final, final_row));
        Positions want = top(orig_final, prefix, static_cast<size_t>(st.n_selected - w));
        want.insert(window.begin(), window.end());
        CHECK(want == kv_set(orig, n_layer - 1));
        wt_context_free(orig);
        // The reference's scores (the last query's raw dot products) rank every token and
        // keep the top K, window or not.
        REQUIRE(wt_prune_set_param(&op, "gemfilter_window_scores", "0") == WT_OK);
        wt_context* ref = make_ctx(model, op, n_ctx);
        prefill(ref, prompt);
        wt_prune_stats ref_st;
        REQUIRE(wt_context_get_prune_stats(ref, &ref_st) == WT_OK);
        const std::vector<float> ref_final = ranking(ref, -1, prompt.size());
        CHECK(finite(ref_final) == all);
        CHECK(top(ref_final, all, static_cast<size_t>(ref_st.n_selected)) == kv_set(ref, n_layer - 1));
        wt_context_free(ref);
        break;
      }
      case WT_PRUNE_SLIMINFER: {
        // Each stage ranks the rows it sees; the last stage's ranking is final, and the
        // blocks it kept outrank the ones it dropped.
        for (int32_t stage : rp.slim_layers) CHECK(finite(rows[static_cast<size_t>(stage)]) == kv_set(ctx, stage));
        CHECK(nan_layers() == n_layer - 3);
        const int32_t last = rp.slim_layers[2];
        CHECK(same_bits(final_row, rows[static_cast<size_t>(last)]));
        const Positions kept = kv_set(ctx, last + 1);
        CHECK(kept.size() == static_cast<size_t>(st.n_selected));
        check_kept_outrank_dropped(final_row, kept, minus(finite(final_row), kept));
        break;
      }
      case WT_PRUNE_TOKENFILTER: {
        const int32_t first = static_cast<int32_t>(std::floor(rp.tf_start * n_layer));
        for (int32_t l = 0; l < n_layer; ++l)
          CHECK(finite(rows[static_cast<size_t>(l)]) == (l < first ? Positions{} : prefix));
        CHECK(same_bits(final_row, rows.back()));
        break;
      }
      case WT_PRUNE_ORACLE: {
        CHECK(finite(final_row) == all);
        for (const std::vector<float>& r : rows) CHECK(finite(r) == all);
        // The re-prefill kept its chosen tokens whole, at their original positions.
        const Positions kept = kv_set(ctx, 0);
        CHECK(kept.size() == static_cast<size_t>(st.n_selected));
        CHECK(minus(window, kept).empty());
        check_kept_outrank_dropped(final_row, minus(kept, window), minus(prefix, kept));
        break;
      }
      case WT_PRUNE_FULL:
        break;
    }
    wt_context_free(ctx);
  }
}

// Saved context states (issue 30, wt_context_state_*) on the CPU backend and the real default
// model: a document prefilled (pruned by each method, or not), saved, loaded into a fresh
// context, then a question prefilled and 32 tokens generated there — against the context
// that was saved going on uninterrupted. Invariant: the same tokens and bit-identical logits
// at every step (the same kernels on the same KV bytes), for full KV and every method, each
// KV type, through a buffer and a file, with and without the KV pager. Then the states a
// load must refuse, each with its status and a message, the context unchanged.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "support/real_model.h"
#include "whittle.h"

namespace {

constexpr int kDoc = 120, kQuestion = 12, kSteps = 32;

struct Setup {
  wt_prune_method method = WT_PRUNE_FULL;
  wt_kv_type kv_type = WT_KV_F32;
  int32_t pager_blocks = 0;  // > 0: the KV pager with that many device blocks
  bool pager_copy = false;   // the copying pager (WT_KV_PAGER_COPY); else in place (the CPU is unified)
};

wt_context* make(const wt_model* m, const Setup& s, int32_t n_ctx = kDoc + kQuestion + kSteps + 64) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = n_ctx;  // room for the oracle's answer tokens too
  cp.n_threads = 2;
  cp.prune.method = s.method;
  // Parameters that prune a prompt of 120 tokens (the defaults' windows and blocks cover it).
  cp.prune.keep = 0.3f;
  cp.prune.window = 8;
  cp.prune.slim_block = 8;
  cp.prune.slim_unit = 4;
  cp.prune.slim_decode_keep = 0.5f;  // SlimInfer re-selects blocks at decode: state to carry
  cp.kv_type = s.kv_type;
  cp.kv_device_blocks = s.pager_blocks;
  cp.kv_pager_flags = s.pager_copy ? WT_KV_PAGER_COPY : 0;
  cp.kv_block_tokens = 8;
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
  return ctx;
}

std::vector<uint8_t> save(wt_context* ctx) {
  size_t n = 0;
  REQUIRE(wt_context_state_size(ctx, &n) == WT_OK);
  std::vector<uint8_t> bytes(n);
  size_t written = 0;
  REQUIRE_MESSAGE(wt_context_state_save(ctx, bytes.data(), bytes.size(), &written) == WT_OK, wt_last_error());
  CHECK(written == n);
  return bytes;
}

struct Run {
  std::vector<wt_token> tokens;
  std::vector<std::vector<float>> logits;
};

// The question, then kSteps greedy steps: every step's logits and token.
Run go_on(wt_context* ctx, const std::vector<wt_token>& question, int32_t n_vocab) {
  Run r;
  REQUIRE_MESSAGE(wt_context_prefill(ctx, question.data(), question.size()) == WT_OK, wt_last_error());
  for (int i = 0; i < kSteps; ++i) {
    const float* l = nullptr;
    REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
    r.logits.emplace_back(l, l + n_vocab);
    wt_token best = 0;
    for (int32_t j = 1; j < n_vocab; ++j)
      if (l[j] > l[best]) best = j;
    r.tokens.push_back(best);
    REQUIRE_MESSAGE(wt_context_decode(ctx, best) == WT_OK, wt_last_error());
  }
  return r;
}

bool same_logits(const wt_context* a, const wt_context* b, int32_t n_vocab) {
  const float *la = nullptr, *lb = nullptr;
  if (wt_context_logits(a, -1, &la) != WT_OK || wt_context_logits(b, -1, &lb) != WT_OK) return false;
  return std::memcmp(la, lb, sizeof(float) * static_cast<size_t>(n_vocab)) == 0;
}

// Save after the document, load into a fresh context (through a buffer, or a file), and
// compare the two going on.
void round_trip(const Setup& s, bool through_file) {
  const wt::test::RealModel& rm = wt::test::real_model();
  wt_model_info info;
  REQUIRE(wt_model_get_info(rm.model, &info) == WT_OK);
  const std::vector<wt_token> doc = rm.prompt(kDoc);
  const std::vector<wt_token> question(rm.text.begin() + 500, rm.text.begin() + 500 + kQuestion);
  wt_context* saved = make(rm.model, s);
  REQUIRE_MESSAGE(wt_context_prefill(saved, doc.data(), doc.size()) == WT_OK, wt_last_error());
  wt_context* loaded = make(rm.model, s);
  size_t state_bytes = 0;
  REQUIRE(wt_context_state_size(saved, &state_bytes) == WT_OK);
  if (through_file) {
    const std::string path = "context_state_test_" + std::to_string(static_cast<int>(s.method)) + ".wts";
    REQUIRE_MESSAGE(wt_context_state_save_file(saved, path.c_str()) == WT_OK, wt_last_error());
    REQUIRE_MESSAGE(wt_context_state_load_file(loaded, path.c_str()) == WT_OK, wt_last_error());
    std::remove(path.c_str());
  } else {
    const std::vector<uint8_t> bytes = save(saved);
    REQUIRE_MESSAGE(wt_context_state_load(loaded, bytes.data(), bytes.size()) == WT_OK, wt_last_error());
  }
  CHECK(wt_context_n_past(loaded) == wt_context_n_past(saved));
  CHECK(same_logits(saved, loaded, info.n_vocab));
  // The KV rows each layer holds, and where they came from, are the saved context's.
  int32_t rows = 0;
  for (int32_t l = 0; l < info.n_layer; ++l) {
    const int32_t *pa = nullptr, *pb = nullptr;
    int32_t na = 0, nb = 0;
    REQUIRE(wt_context_get_kv_positions(saved, l, 0, &pa, &na) == WT_OK);
    REQUIRE(wt_context_get_kv_positions(loaded, l, 0, &pb, &nb) == WT_OK);
    REQUIRE(na == nb);
    CHECK(std::memcmp(pa, pb, sizeof(int32_t) * static_cast<size_t>(na)) == 0);
    rows += na;
  }
  const Run want = go_on(saved, question, info.n_vocab);
  const Run got = go_on(loaded, question, info.n_vocab);
  int first_diff = -1;
  for (size_t i = 0; i < want.logits.size() && first_diff < 0; ++i)
    if (std::memcmp(want.logits[i].data(), got.logits[i].data(), sizeof(float) * want.logits[i].size()) != 0)
      first_diff = static_cast<int>(i);
  MESSAGE(std::string(wt_prune_method_name(s.method)) << std::string(s.kv_type == WT_KV_F16 ? " f16" : s.kv_type == WT_KV_Q8_0 ? " q8_0" : "")
                                         << std::string(s.pager_blocks ? (s.pager_copy ? " paged (copying)" : " paged (in place)") : "")
                                         << std::string(through_file ? " (file)" : "")
                                         << ": state " << state_bytes << " bytes, " << rows
                                         << " KV rows of KV head 0 over the layers; logits differ first at step "
                                         << (first_diff < 0 ? std::string("none") : std::to_string(first_diff)));
  CHECK(got.tokens == want.tokens);
  CHECK(first_diff == -1);
  wt_context_free(saved);
  wt_context_free(loaded);
}

}  // namespace

TEST_CASE("context state: a loaded state goes on bit for bit as the saved context for full KV and every method" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  for (int32_t i = 0; i < wt_prune_method_count(); ++i) {
    wt_prune_method m;
    REQUIRE(wt_prune_method_at(i, &m) == WT_OK);
    const std::string name = wt_prune_method_name(m);
    CAPTURE(name);
    round_trip(Setup{m, WT_KV_F32, 0}, false);
  }
}

TEST_CASE("context state: through a file and in f16 and q8_0 caches and with the KV pager" * doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  round_trip(Setup{WT_PRUNE_FULL, WT_KV_F32, 0}, true);
  round_trip(Setup{WT_PRUNE_SLIMINFER, WT_KV_F32, 0}, true);
  for (wt_kv_type t : {WT_KV_F16, WT_KV_Q8_0}) {
    round_trip(Setup{WT_PRUNE_FULL, t, 0}, false);
    round_trip(Setup{WT_PRUNE_SNAPKV, t, 0}, false);
  }
  // The pager: blocks gathered in logical order on save, appended into the pool on load.
  wt_model_info info;
  REQUIRE(wt_model_get_info(wt::test::real_model().model, &info) == WT_OK);
  const int32_t quarter = info.n_layer * ((kDoc + kQuestion + kSteps + 64) / 8) / 4;
  round_trip(Setup{WT_PRUNE_FULL, WT_KV_F32, quarter, true}, false);
  round_trip(Setup{WT_PRUNE_SLIMINFER, WT_KV_Q8_0, quarter, true}, false);
  round_trip(Setup{WT_PRUNE_FULL, WT_KV_F32, quarter, false}, false);
  round_trip(Setup{WT_PRUNE_SLIMINFER, WT_KV_Q8_0, quarter, false}, false);
}

TEST_CASE("context state: a state of a pager context loads into a resident one and back" * doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt::test::RealModel& rm = wt::test::real_model();
  wt_model_info info;
  REQUIRE(wt_model_get_info(rm.model, &info) == WT_OK);
  const std::vector<wt_token> doc = rm.prompt(kDoc);
  const int32_t quarter = info.n_layer * ((kDoc + kQuestion + kSteps + 64) / 8) / 4;
  for (bool copy : {true, false}) {
    CAPTURE(copy);
    wt_context* paged = make(rm.model, Setup{WT_PRUNE_FULL, WT_KV_F32, quarter, copy});
    wt_context* resident = make(rm.model, Setup{});
    REQUIRE(wt_context_prefill(paged, doc.data(), doc.size()) == WT_OK);
    const std::vector<uint8_t> a = save(paged);
    REQUIRE_MESSAGE(wt_context_state_load(resident, a.data(), a.size()) == WT_OK, wt_last_error());
    const std::vector<uint8_t> b = save(resident);
    CHECK(a == b);  // the format does not depend on where the KV lives
    wt_context_free(paged);
    wt_context_free(resident);
  }
}

namespace {

// A load that must be refused: the status, a message, and the context as it was.
void refused(wt_context* ctx, const std::vector<uint8_t>& state, wt_status want, const char* needle,
             size_t n_bytes = ~size_t{0}) {
  wt_model_info info;
  REQUIRE(wt_model_get_info(wt::test::real_model().model, &info) == WT_OK);
  const int32_t n_past = wt_context_n_past(ctx);
  const float* before = nullptr;
  REQUIRE(wt_context_logits(ctx, -1, &before) == WT_OK);
  const std::vector<float> logits(before, before + info.n_vocab);
  const wt_status got = wt_context_state_load(ctx, state.data(), n_bytes == ~size_t{0} ? state.size() : n_bytes);
  const std::string msg = wt_last_error();
  MESSAGE(std::string(wt_status_string(got)) << ": " << msg);
  CHECK(got == want);
  CHECK(msg.find(needle) != std::string::npos);
  CHECK(wt_context_n_past(ctx) == n_past);
  const float* after = nullptr;
  REQUIRE(wt_context_logits(ctx, -1, &after) == WT_OK);
  CHECK(std::memcmp(after, logits.data(), sizeof(float) * logits.size()) == 0);
}

}  // namespace

TEST_CASE("context state: truncated or damaged or newer states and those of another model or KV type or too large are refused" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt::test::RealModel& rm = wt::test::real_model();
  const std::vector<wt_token> doc = rm.prompt(kDoc);
  wt_context* src = make(rm.model, Setup{WT_PRUNE_SNAPKV, WT_KV_F32, 0});
  REQUIRE(wt_context_prefill(src, doc.data(), doc.size()) == WT_OK);
  const std::vector<uint8_t> good = save(src);
  // The context that refuses: a shorter prompt in it, so "unchanged" is visible.
  wt_context* ctx = make(rm.model, Setup{WT_PRUNE_SNAPKV, WT_KV_F32, 0});
  const std::vector<wt_token> other = rm.prompt(40);
  REQUIRE(wt_context_prefill(ctx, other.data(), other.size()) == WT_OK);

  // Cut short: within the header it ends early; after it, the checksum no longer matches.
  for (size_t n : {size_t{0}, size_t{7}, size_t{79}, size_t{80}, good.size() / 2, good.size() - 1}) {
    CAPTURE(n);
    refused(ctx, good, WT_ERR_FORMAT, n < 80 ? "ends early" : "cut short", n);
  }
  {
    std::vector<uint8_t> longer = good;
    longer.push_back(0);
    refused(ctx, longer, WT_ERR_FORMAT, "damaged");
  }
  // A flipped byte anywhere in the payload: the checksum.
  for (size_t at : {size_t{100}, good.size() / 3, good.size() - 9}) {
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x10;
    CAPTURE(at);
    refused(ctx, bad, WT_ERR_FORMAT, "damaged");
  }
  std::vector<uint8_t> bad = good;
  bad[0] = 'X';
  refused(ctx, bad, WT_ERR_FORMAT, "not a Whittle context state");
  bad = good;
  bad[8] = 2;  // the format version, little-endian u32 at byte 8
  refused(ctx, bad, WT_ERR_UNSUPPORTED, "newer than this library");
  bad = good;
  bad[16] ^= 1;  // the model's fingerprint
  refused(ctx, bad, WT_ERR_INVALID_ARGUMENT, "another model");

  // Another KV type, another method, a context too small.
  wt_context* f16 = make(rm.model, Setup{WT_PRUNE_SNAPKV, WT_KV_F16, 0});
  REQUIRE(wt_context_prefill(f16, other.data(), other.size()) == WT_OK);
  refused(f16, good, WT_ERR_INVALID_ARGUMENT, "this context keeps f16");
  wt_context* full = make(rm.model, Setup{WT_PRUNE_FULL, WT_KV_F32, 0});
  REQUIRE(wt_context_prefill(full, other.data(), other.size()) == WT_OK);
  refused(full, good, WT_ERR_INVALID_ARGUMENT, "pruned by snapkv");
  wt_context* small = make(rm.model, Setup{WT_PRUNE_SNAPKV, WT_KV_F32, 0}, 64);
  REQUIRE(wt_context_prefill(small, other.data(), other.size()) == WT_OK);
  refused(small, good, WT_ERR_CONTEXT_FULL, "this context is created for 64");

  // A full-KV state loads into a pruning context (nothing of the policy to carry).
  wt_context* plain = make(rm.model, Setup{});
  REQUIRE(wt_context_prefill(plain, doc.data(), doc.size()) == WT_OK);
  const std::vector<uint8_t> unpruned = save(plain);
  CHECK(wt_context_state_load(ctx, unpruned.data(), unpruned.size()) == WT_OK);
  CHECK(wt_context_n_past(ctx) == kDoc);

  // Sizes and misuse.
  size_t need = 0;
  CHECK(wt_context_state_save(src, nullptr, 0, &need) == WT_ERR_BUFFER_TOO_SMALL);
  CHECK(need == good.size());
  std::vector<uint8_t> small_buf(10);
  CHECK(wt_context_state_save(src, small_buf.data(), small_buf.size(), &need) == WT_ERR_BUFFER_TOO_SMALL);
  CHECK(need == good.size());
  CHECK(wt_context_state_load(ctx, nullptr, 10) == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt_context_state_load_file(ctx, "/nonexistent/state.wts") == WT_ERR_IO);
  CHECK(wt_context_state_save_file(src, "/nonexistent/dir/state.wts") == WT_ERR_IO);
  for (wt_context* c : {src, ctx, f16, full, small, plain}) wt_context_free(c);
}

TEST_CASE("context state: the state of a pruned prompt is its kept KV within 10% of its bytes" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt::test::RealModel& rm = wt::test::real_model();
  const std::vector<wt_token> doc = rm.prompt(1000);
  for (wt_prune_method m : {WT_PRUNE_FULL, WT_PRUNE_SNAPKV, WT_PRUNE_FASTKV}) {
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = 1100;
    cp.n_threads = 2;
    cp.prune.method = m;
    cp.prune.keep = 0.2f;
    wt_context* ctx = nullptr;
    REQUIRE(wt_context_create(rm.model, &cp, &ctx) == WT_OK);
    REQUIRE(wt_context_prefill(ctx, doc.data(), doc.size()) == WT_OK);
    wt_prune_stats ps;
    REQUIRE(wt_context_get_prune_stats(ctx, &ps) == WT_OK);
    uint64_t kv = 0;
    for (int32_t l = 0; l < ps.n_layer; ++l) kv += ps.kv_bytes ? ps.kv_bytes[l] : 0;
    size_t n = 0;
    REQUIRE(wt_context_state_size(ctx, &n) == WT_OK);
    MESSAGE(std::string(wt_prune_method_name(m)) << " keep 0.2 over 1000 tokens: state " << n << " bytes, kept KV " << kv
                                    << " bytes (" << 100.0 * static_cast<double>(n) / static_cast<double>(kv) << "%)");
    if (m != WT_PRUNE_FULL) {
      CHECK(n >= kv);
      CHECK(static_cast<double>(n) <= 1.1 * static_cast<double>(kv));
    }
    wt_context_free(ctx);
  }
}

// Matmuls whose weights are larger than one binding reaches run in row ranges
// (OpRunner::linears_split; Vulkan's maxStorageBufferRange is 128 MiB on lavapipe, less
// than Qwen2.5's output heads). On the CPU each output is then the same dot product as in
// one launch, so the logits must be the same bits: checked on the default model with a test
// limit that splits its output head (30 MB) and, at the lower one, every feed-forward and
// query matmul too (the decode step's fused calls: norm, gate, accumulate, biases, rope, glu).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/engine/op_runner.h"
#include "support/real_model.h"
#include "whittle.h"

namespace {

// Every prompt row's logits, then those of n_decode greedy steps, in one vector.
std::vector<float> run(const wt_model* m, const std::vector<wt_token>& prompt, int n_decode, wt_matmul_mode mode) {
  wt_model_info info;
  REQUIRE(wt_model_get_info(m, &info) == WT_OK);
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = static_cast<int32_t>(prompt.size()) + n_decode + 4;
  cp.n_threads = 2;
  cp.logits_all = true;
  cp.matmul_mode = mode;
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
  REQUIRE_MESSAGE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK, wt_last_error());
  std::vector<float> out;
  const float* l = nullptr;
  for (int32_t r = 0; r < static_cast<int32_t>(prompt.size()); ++r) {
    REQUIRE(wt_context_logits(ctx, r, &l) == WT_OK);
    out.insert(out.end(), l, l + info.n_vocab);
  }
  for (int i = 0; i < n_decode; ++i) {
    const wt_token t = static_cast<wt_token>(std::max_element(l, l + info.n_vocab) - l);
    REQUIRE_MESSAGE(wt_context_decode(ctx, t) == WT_OK, wt_last_error());
    REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
    out.insert(out.end(), l, l + info.n_vocab);
  }
  wt_context_free(ctx);
  return out;
}

// Sets the test limit for one scope.
struct SplitLimit {
  explicit SplitLimit(size_t bytes) { wt::set_matmul_split_bytes_for_testing(bytes); }
  ~SplitLimit() { wt::set_matmul_split_bytes_for_testing(0); }
};

}  // namespace

TEST_CASE("model: matmuls split into row ranges give the logits of one launch, bit for bit (CPU)" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt_model* m = wt::test::real_model().model;
  const std::vector<wt_token> prompt = wt::test::real_model().prompt(24);
  // 4 MiB: the output head (tied to the 30 MB embedding table) in 8 ranges. 160 KiB: also
  // every query (207 KB), gate, up and down (553 KB) matrix; keys and values (69 KB) whole.
  for (const wt_matmul_mode mode : {WT_MATMUL_FAST, WT_MATMUL_F32}) {
    const std::vector<float> one = run(m, prompt, 4, mode);
    for (const size_t limit : {size_t{4} << 20, size_t{160} << 10}) {
      CAPTURE(mode);
      CAPTURE(limit);
      std::vector<float> split;
      {
        const SplitLimit scope(limit);
        split = run(m, prompt, 4, mode);
      }
      REQUIRE(split.size() == one.size());
      CHECK(std::memcmp(split.data(), one.data(), sizeof(float) * one.size()) == 0);
    }
  }
}

TEST_CASE("model: a weight row longer than the split limit is refused with a message, not run") {
  if (!wt::test::have_real_model()) return;
  const wt_model* m = wt::test::real_model().model;
  const std::vector<wt_token> prompt = wt::test::real_model().prompt(4);
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 8;
  cp.n_threads = 2;
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, wt_last_error());
  {
    const SplitLimit scope(600);  // below one row and the binding slack
    CHECK(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_ERR_UNSUPPORTED);
    CHECK(std::strstr(wt_last_error(), "more than one binding reaches") != nullptr);
  }
  wt_context_free(ctx);
}

// Tensors larger than one binding reaches run in row ranges (Vulkan's maxStorageBufferRange
// is 128 MiB on lavapipe, less than Qwen2.5's output heads): matmuls in OpRunner::linears,
// the embedding table in the Vulkan backend's embed. On the CPU, a backend made with a
// smaller binding limit (BackendOptions::max_binding_bytes) splits the same matmuls, each
// output then the same dot product as in one launch, so the logits must be the same bits:
// checked on the default model at a limit that splits its output head (30 MB) and at one
// that splits every query, gate, up and down matrix too (the decode step's fused calls:
// norm, gate, accumulate, biases, rope, glu).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "runtime/api/handles.h"
#include "runtime/model/gguf.h"
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

// The default model on a CPU backend whose bindings reach max_binding_bytes.
wt::Status load_with_limit(size_t max_binding_bytes, std::unique_ptr<wt_model>* out) {
  wt::BackendOptions bo;
  bo.n_threads = 2;
  bo.max_binding_bytes = max_binding_bytes;
  std::unique_ptr<wt::Backend> cpu;
  REQUIRE(wt::create_cpu_backend(bo, &cpu).is_ok());
  std::shared_ptr<wt::GgufFile> file;
  REQUIRE(wt::GgufFile::open(wt::test::real_model_path(), &file).is_ok());
  return wt::api::make_model(std::move(file), wt::LoadOptions{}, std::move(cpu), out);
}

}  // namespace

TEST_CASE("model: matmuls split into row ranges give the logits of one launch, bit for bit (CPU)" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt_model* m = wt::test::real_model().model;
  const std::vector<wt_token> prompt = wt::test::real_model().prompt(24);
  // 4 MiB: the output head (tied to the 30 MB embedding table) in 8 ranges. 160 KiB: also
  // every query (207 KB), gate, up and down (553 KB) matrix; keys and values (69 KB) whole.
  for (const size_t limit : {size_t{4} << 20, size_t{160} << 10}) {
    std::unique_ptr<wt_model> split;
    const wt::Status st = load_with_limit(limit, &split);
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    for (const wt_matmul_mode mode : {WT_MATMUL_FAST, WT_MATMUL_F32}) {
      CAPTURE(limit);
      CAPTURE(mode);
      const std::vector<float> one = run(m, prompt, 4, mode);
      const std::vector<float> ranges = run(split.get(), prompt, 4, mode);
      REQUIRE(ranges.size() == one.size());
      CHECK(std::memcmp(ranges.data(), one.data(), sizeof(float) * one.size()) == 0);
    }
  }
}

TEST_CASE("model: a weight whose row is more than one binding reaches is refused at load, by name") {
  if (!wt::test::have_real_model()) return;
  std::unique_ptr<wt_model> m;
  const wt::Status st = load_with_limit(600, &m);  // token_embd's Q8_0 rows are 612 bytes
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  MESSAGE(st.message());
  CHECK(st.message().find("token_embd") != std::string::npos);
  CHECK(st.message().find("binds at most 600 bytes") != std::string::npos);
}

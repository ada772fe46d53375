// Tensors larger than one binding reaches run in row ranges (Vulkan's maxStorageBufferRange
// is 128 MiB on lavapipe, less than Qwen2.5's output heads): matmuls in OpRunner::linears,
// the embedding table in the Vulkan backend's embed. On the CPU, a backend made with a
// smaller binding limit (BackendOptions::max_binding_bytes) refuses a matmul over larger
// weights, as a device's binding would, so the engine must split; each output is then the
// same dot product as in one launch, and the results must be the same bits:
// - op by op, OpRunner::linears with each of MatmulOp's fusions (norm, gate, accumulate,
//   biases, rope, glu) and unfused biases over several rows;
// - the default model's logits, at a limit that splits its output head (30 MB) and at one
//   that also splits every query, gate, up and down matrix.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "runtime/api/handles.h"
#include "runtime/engine/op_runner.h"
#include "runtime/model/gguf.h"
#include "support/real_model.h"
#include "whittle.h"

namespace {

using wt::DType;
using wt::Tensor;

// A CPU backend with a workspace; max_binding_bytes 0 = no limit.
struct Cpu {
  std::unique_ptr<wt::Backend> be;
  wt::Buffer ws;
  explicit Cpu(size_t max_binding_bytes) {
    wt::BackendOptions o;
    o.n_threads = 2;
    o.max_binding_bytes = max_binding_bytes;
    REQUIRE(wt::create_cpu_backend(o, &be).is_ok());
    REQUIRE(be->alloc(size_t{1} << 20, wt::MemoryKind::device, &ws).is_ok());
    be->set_workspace(ws);
  }
  ~Cpu() { be->free(&ws); }
};

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

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
  REQUIRE_MESSAGE(wt_context_create(m, &cp, &ctx) == WT_OK, std::string(wt_last_error()));
  REQUIRE_MESSAGE(wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK, std::string(wt_last_error()));
  std::vector<float> out;
  const float* l = nullptr;
  for (int32_t r = 0; r < static_cast<int32_t>(prompt.size()); ++r) {
    REQUIRE(wt_context_logits(ctx, r, &l) == WT_OK);
    out.insert(out.end(), l, l + info.n_vocab);
  }
  for (int i = 0; i < n_decode; ++i) {
    const wt_token t = static_cast<wt_token>(std::max_element(l, l + info.n_vocab) - l);
    REQUIRE_MESSAGE(wt_context_decode(ctx, t) == WT_OK, std::string(wt_last_error()));
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

TEST_CASE("matmul split: each fusion over row ranges gives the bits of one launch and the limit is enforced") {
  // Three products of 96 outputs over k = 64 f32 (256-byte rows, 24 KiB each); a 5632-byte
  // limit holds 20 rows with the slack: ranges of 20, 20, 20, 20, 16.
  constexpr int64_t k = 64, n_out = 96, heads = 6, hd = 16;
  const size_t limit = 20 * 256 + wt::kBindingSlackBytes;
  REQUIRE(wt::rows_per_binding(limit, 256) == 20);
  Cpu whole(0), split(limit);
  std::vector<float> w_data[3], b_data[3];
  Tensor w[3], bias[3];
  for (int i = 0; i < 3; ++i) {
    w_data[i] = random_floats(static_cast<size_t>(k * n_out), 10 + i);
    b_data[i] = random_floats(static_cast<size_t>(n_out), 20 + i);
    w[i] = wt::make_tensor_2d(w_data[i].data(), DType::f32, k, n_out);
    bias[i] = wt::make_tensor_2d(b_data[i].data(), DType::f32, n_out, 1);
  }
  std::vector<float> x_data = random_floats(static_cast<size_t>(k * 5), 1), norm_data = random_floats(k, 2),
                     gate_data = random_floats(k, 3);
  const Tensor x1 = wt::make_tensor_2d(x_data.data(), DType::f32, k, 1);
  const Tensor x5 = wt::make_tensor_2d(x_data.data(), DType::f32, k, 5);
  const Tensor norm = wt::make_tensor_2d(norm_data.data(), DType::f32, k, 1);
  const Tensor gate = wt::make_tensor_2d(gate_data.data(), DType::f32, k, 1);
  const int32_t position = 7;

  // The backend refuses one launch over weights larger than its limit.
  {
    std::vector<float> out(static_cast<size_t>(n_out));
    const Tensor dst = wt::make_tensor_2d(out.data(), DType::f32, n_out, 1);
    const wt::Status st = split.be->launch(wt::MatmulOp{.dst = dst, .x = x1, .w = w[0]});
    CHECK(st.code() == WT_ERR_UNSUPPORTED);
  }

  struct Case {
    const char* name;
    int n;
    bool rows5, use_bias, norm, gate, accumulate, rope, glu;
  };
  const Case cases[] = {
      {"plain", 1, false, false, false, false, false, false, false},
      {"unfused biases, 3 products, 5 rows", 3, true, true, false, false, false, false, false},
      {"norm and biases, 3 products", 3, false, true, true, false, false, false, false},
      {"gate and accumulate", 1, false, false, false, true, true, false, false},
      {"norm, biases and rope (queries and keys)", 2, false, true, true, false, false, true, false},
      {"glu (gate and up) with biases", 2, false, true, false, false, false, false, true},
      {"rope alone (biases added before it)", 2, false, true, false, false, false, true, false},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    const Tensor& x = c.rows5 ? x5 : x1;
    const int64_t rows = x.ne[1];
    std::vector<float> outs[2][3];
    for (int side = 0; side < 2; ++side) {
      Tensor dst[3];
      for (int i = 0; i < c.n; ++i) {
        outs[side][i] = random_floats(static_cast<size_t>(n_out * rows), 30 + i);  // accumulate adds into it
        dst[i] = wt::make_tensor_2d(outs[side][i].data(), DType::f32, n_out, rows);
      }
      wt::MatmulFusion f;
      if (c.norm) f.norm = norm;
      f.eps = 1e-5f;
      if (c.gate) f.gate = gate;
      f.accumulate = c.accumulate;
      f.glu = c.glu;
      if (c.rope) {
        const int64_t ne[3] = {hd, heads, 1};
        f.rope = wt::RopeOp{.x = wt::make_tensor(outs[side][0].data(), DType::f32, 3, ne),
                            .x2 = wt::make_tensor(outs[side][1].data(), DType::f32, 3, ne),
                            .positions = &position,
                            .n_rot = hd,
                            .neox = true,
                            .theta_base = 10000.0f,
                            .position_scale = 1.0f};
      }
      const Tensor none[3] = {};
      wt::Backend& be = side == 0 ? *whole.be : *split.be;
      wt::OpRunner run(be, false);
      const wt::Status st = run.linears(c.n, dst, x, w, c.use_bias ? bias : none, f);
      REQUIRE_MESSAGE(st.is_ok(), st.message());
      REQUIRE(be.synchronize(wt::Stream::compute).is_ok());
    }
    for (int i = 0; i < c.n; ++i)
      CHECK(std::memcmp(outs[0][i].data(), outs[1][i].data(), sizeof(float) * outs[0][i].size()) == 0);
  }
}

TEST_CASE("model: matmuls split into row ranges give the logits of one launch bit for bit (CPU)" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  const wt_model* m = wt::test::real_model().model;
  const std::vector<wt_token> prompt = wt::test::real_model().prompt(24);
  const wt_matmul_mode modes[] = {WT_MATMUL_FAST, WT_MATMUL_F32};
  std::vector<float> one[2];
  for (int i = 0; i < 2; ++i) one[i] = run(m, prompt, 4, modes[i]);
  // 4 MiB: the output head (tied to the 30 MB embedding table) in 8 ranges. 160 KiB: also
  // every query (207 KB), gate, up and down (553 KB) matrix; keys and values (69 KB) whole.
  for (const size_t limit : {size_t{4} << 20, size_t{160} << 10}) {
    std::unique_ptr<wt_model> split;
    const wt::Status st = load_with_limit(limit, &split);
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    for (int i = 0; i < 2; ++i) {
      CAPTURE(limit);
      CAPTURE(modes[i]);
      const std::vector<float> ranges = run(split.get(), prompt, 4, modes[i]);
      REQUIRE(ranges.size() == one[i].size());
      CHECK(std::memcmp(ranges.data(), one[i].data(), sizeof(float) * one[i].size()) == 0);
    }
  }
}

TEST_CASE("model: a weight whose row is more than one binding reaches is refused at load by name" *
          doctest::test_suite("model")) {
  if (!wt::test::have_real_model()) return;
  std::unique_ptr<wt_model> m;
  // 600 bytes hold no row of any weight with the slack; token_embd (612-byte Q8_0 rows) is
  // named because placement meets it first.
  const wt::Status st = load_with_limit(600, &m);
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  MESSAGE(st.message());
  CHECK(st.message().find("token_embd") != std::string::npos);
  CHECK(st.message().find("binds at most 600 bytes") != std::string::npos);
}

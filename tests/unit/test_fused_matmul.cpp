// MatmulOp's one-row fusions on the CPU backend (the reference the device backends are held
// to): the fused call against the definition in double (f32 activations), bit for bit the
// ops it replaces (rmsnorm or swiglu, matmul, add: the engine's unfused decode step, int8
// activations), and the calls validate_op refuses.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backends/backend.h"
#include "kernels/cpu/quant.h"

namespace {

using wt::DType;
using wt::MatmulOp;
using wt::Tensor;

struct Cpu {
  std::unique_ptr<wt::Backend> be;
  wt::Buffer ws;
  Cpu() {
    wt::BackendOptions o;
    o.n_threads = 2;
    REQUIRE(wt::create_cpu_backend(o, &be).is_ok());
    REQUIRE(be->alloc(size_t{1} << 20, wt::MemoryKind::device, &ws).is_ok());
    be->set_workspace(ws);
  }
  ~Cpu() { be->free(&ws); }
  wt::Status run(const wt::OpCall& c) {
    REQUIRE(be->workspace_bytes(c) <= ws.size_bytes);
    wt::Status st = be->launch(c);
    if (st.is_ok()) st = be->synchronize(wt::Stream::compute);
    return st;
  }
};

std::vector<float> normal(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

Tensor row(std::vector<float>& v) { return wt::make_tensor_2d(v.data(), DType::f32, static_cast<int64_t>(v.size()), 1); }

}  // namespace

TEST_CASE("fused matmul: norm, gate and accumulate follow their definitions on the CPU") {
  Cpu cpu;
  const int64_t k = 72, out = 19;
  std::vector<float> x = normal(k, 1, 3.0f), nw = normal(k, 2), g = normal(k, 3), w = normal(k * out, 4, 0.2f);
  const std::vector<float> y0 = normal(out, 5);
  const Tensor wt = wt::make_tensor_2d(w.data(), DType::f32, k, out);
  const double eps = 1e-5;

  // The inputs the fusions stand for, in double.
  double ss = 0;
  for (float v : x) ss += static_cast<double>(v) * v;
  const double inv_rms = 1.0 / std::sqrt(ss / static_cast<double>(k) + eps);
  std::vector<double> normed(k), gated(k);
  for (int64_t i = 0; i < k; ++i) {
    normed[i] = x[i] * inv_rms * nw[i];
    gated[i] = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * x[i];
  }
  auto product = [&](const std::vector<double>& in, int64_t o) {
    double s = 0;
    for (int64_t i = 0; i < k; ++i) s += static_cast<double>(w[o * k + i]) * in[i];
    return s;
  };

  for (int kind = 0; kind < 2; ++kind) {
    for (bool acc : {false, true}) {
      CAPTURE(kind);
      CAPTURE(acc);
      std::vector<float> y = y0;
      MatmulOp m{.dst = row(y), .x = row(x), .w = wt, .f32_activations = true, .accumulate = acc};
      if (kind == 0) {
        m.norm = row(nw);
        m.norm_eps = static_cast<float>(eps);
      } else {
        m.gate = row(g);
      }
      REQUIRE(cpu.run(m).is_ok());
      for (int64_t o = 0; o < out; ++o) {
        const double want = (acc ? y0[o] : 0.0) + product(kind == 0 ? normed : gated, o);
        CHECK(std::fabs(y[o] - want) <= 1e-4 * (1.0 + std::fabs(want)));
      }
    }
  }
  // Accumulate alone: y0 + W x.
  std::vector<float> y = y0;
  REQUIRE(cpu.run(MatmulOp{.dst = row(y), .x = row(x), .w = wt, .f32_activations = true, .accumulate = true}).is_ok());
  std::vector<double> xd(x.begin(), x.end());
  for (int64_t o = 0; o < out; ++o) CHECK(std::fabs(y[o] - (y0[o] + product(xd, o))) <= 1e-4 * (1.0 + std::fabs(y[o])));
}

TEST_CASE("fused matmul: bit-identical to rmsnorm, swiglu, matmul, add and rope as separate ops (int8 activations)") {
  Cpu cpu;
  const int64_t k = 256, o1 = 48, o2 = 40;
  std::vector<float> x = normal(k, 11, 3.0f), nw = normal(k, 12), g = normal(k, 13);
  const std::vector<float> wf = normal(k * (o1 + o2), 14, 0.1f);
  std::vector<uint8_t> wq(static_cast<size_t>((o1 + o2) * (k / 32) * 34));
  wt::cpu::quantize_q8_0(wf.data(), wq.data(), k * (o1 + o2));
  const Tensor w1 = wt::make_tensor_2d(wq.data(), DType::q8_0, k, o1);
  const Tensor w2 = wt::make_tensor_2d(wq.data() + w1.nb[1] * o1, DType::q8_0, k, o2);
  const std::vector<float> start = normal(o1 + o2, 15);

  // Norm into two products.
  std::vector<float> fused = start, split = start, xn(k);
  MatmulOp f{.dst = wt::make_tensor_2d(fused.data(), DType::f32, o1, 1), .x = row(x), .w = w1};
  f.dst2 = wt::make_tensor_2d(fused.data() + o1, DType::f32, o2, 1);
  f.w2 = w2;
  f.norm = row(nw);
  f.norm_eps = 1e-6f;
  REQUIRE(cpu.run(f).is_ok());
  REQUIRE(cpu.run(wt::RmsnormOp{.dst = row(xn), .x = row(x), .weight = row(nw), .eps = 1e-6f}).is_ok());
  MatmulOp s{.dst = wt::make_tensor_2d(split.data(), DType::f32, o1, 1), .x = row(xn), .w = w1};
  s.dst2 = wt::make_tensor_2d(split.data() + o1, DType::f32, o2, 1);
  s.w2 = w2;
  REQUIRE(cpu.run(s).is_ok());
  CHECK(std::memcmp(fused.data(), split.data(), sizeof(float) * fused.size()) == 0);

  // silu(gate) * x into a product added into dst.
  fused = start;
  split = start;
  std::vector<float> h(k), p(o1);
  REQUIRE(cpu.run(MatmulOp{.dst = wt::make_tensor_2d(fused.data(), DType::f32, o1, 1), .x = row(x), .w = w1,
                           .gate = row(g), .accumulate = true})
              .is_ok());
  REQUIRE(cpu.run(wt::SwigluOp{.dst = row(h), .gate = row(g), .up = row(x)}).is_ok());
  REQUIRE(cpu.run(MatmulOp{.dst = row(p), .x = row(h), .w = w1}).is_ok());
  const Tensor first = wt::make_tensor_2d(split.data(), DType::f32, o1, 1);
  REQUIRE(cpu.run(wt::AddOp{.dst = first, .a = first, .b = row(p)}).is_ok());
  CHECK(std::memcmp(fused.data(), split.data(), sizeof(float) * fused.size()) == 0);

  // Queries and keys (heads of 8) with the norm, biases and rope (neox, n_rot 6 of 8) as a
  // decode step fuses them: rmsnorm, matmul, two adds, rope.
  std::vector<float> b = normal(o1 + o2, 16);
  const int32_t pos = 1234;
  auto heads = [](float* p, int64_t n) {
    const int64_t ne[3] = {8, n / 8, 1};
    return wt::make_tensor(p, DType::f32, 3, ne);
  };
  for (float* out : {fused.data(), split.data()}) {
    MatmulOp m{.dst = wt::make_tensor_2d(out, DType::f32, o1, 1), .x = row(x), .w = w1};
    m.dst2 = wt::make_tensor_2d(out + o1, DType::f32, o2, 1);
    m.w2 = w2;
    const wt::RopeOp r{.x = heads(out, o1), .x2 = heads(out + o1, o2), .positions = &pos, .n_rot = 6, .neox = true,
                       .theta_base = 1e6f};
    if (out == fused.data()) {
      m.norm = row(nw);
      m.norm_eps = 1e-6f;
      m.bias = wt::make_tensor_2d(b.data(), DType::f32, o1, 1);
      m.bias2 = wt::make_tensor_2d(b.data() + o1, DType::f32, o2, 1);
      m.rope = r;
      REQUIRE(cpu.run(m).is_ok());
    } else {
      REQUIRE(cpu.run(wt::RmsnormOp{.dst = row(xn), .x = row(x), .weight = row(nw), .eps = 1e-6f}).is_ok());
      m.x = row(xn);
      REQUIRE(cpu.run(m).is_ok());
      REQUIRE(cpu.run(wt::AddOp{.dst = m.dst, .a = m.dst, .b = wt::make_tensor_2d(b.data(), DType::f32, o1, 1)}).is_ok());
      REQUIRE(cpu.run(wt::AddOp{.dst = m.dst2, .a = m.dst2, .b = wt::make_tensor_2d(b.data() + o1, DType::f32, o2, 1)})
                  .is_ok());
      REQUIRE(cpu.run(r).is_ok());
    }
  }
  CHECK(std::memcmp(fused.data(), split.data(), sizeof(float) * fused.size()) == 0);

  // Gate and up with the norm, biases and glu (a decode step's feed-forward on a backend with
  // fuse_glu): rmsnorm, matmul, two adds, swiglu into the first product.
  const Tensor w2o1 = wt::make_tensor_2d(wq.data() + w1.nb[1] * o2, DType::q8_0, k, o1);  // a second o1-wide weight
  fused.assign(static_cast<size_t>(2 * o1), 0.0f);  // gate then up
  split = fused;
  for (float* out : {fused.data(), split.data()}) {
    MatmulOp m{.dst = wt::make_tensor_2d(out, DType::f32, o1, 1), .x = row(x), .w = w1};
    m.dst2 = wt::make_tensor_2d(out + o1, DType::f32, o1, 1);
    m.w2 = w2o1;
    const Tensor b1 = wt::make_tensor_2d(b.data(), DType::f32, o1, 1), b2 = wt::make_tensor_2d(b.data() + o2, DType::f32, o1, 1);
    if (out == fused.data()) {
      m.norm = row(nw);
      m.norm_eps = 1e-6f;
      m.bias = b1;
      m.bias2 = b2;
      m.glu = true;
      REQUIRE(cpu.run(m).is_ok());
    } else {
      REQUIRE(cpu.run(wt::RmsnormOp{.dst = row(xn), .x = row(x), .weight = row(nw), .eps = 1e-6f}).is_ok());
      m.x = row(xn);
      REQUIRE(cpu.run(m).is_ok());
      REQUIRE(cpu.run(wt::AddOp{.dst = m.dst, .a = m.dst, .b = b1}).is_ok());
      REQUIRE(cpu.run(wt::AddOp{.dst = m.dst2, .a = m.dst2, .b = b2}).is_ok());
      REQUIRE(cpu.run(wt::SwigluOp{.dst = m.dst, .gate = m.dst, .up = m.dst2}).is_ok());
    }
  }
  CHECK(std::memcmp(fused.data(), split.data(), sizeof(float) * fused.size()) == 0);
}

TEST_CASE("fused matmul: calls the fusions cannot take are refused with a message (rope angles among them)") {
  Cpu cpu;
  const int64_t k = 64, out = 8;
  std::vector<float> x = normal(2 * k, 21), nw = normal(k, 22), w = normal(k * out, 23), y(2 * out);
  const Tensor wt = wt::make_tensor_2d(w.data(), DType::f32, k, out);
  const Tensor x1 = wt::make_tensor_2d(x.data(), DType::f32, k, 1);
  const Tensor y1 = wt::make_tensor_2d(y.data(), DType::f32, out, 1);
  auto refused = [&](const MatmulOp& m, const char* words) {
    const wt::Status st = cpu.run(m);
    CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
    CHECK_MESSAGE(st.message().find(words) != std::string::npos, st.message());
  };
  refused(MatmulOp{.dst = wt::make_tensor_2d(y.data(), DType::f32, out, 2),
                   .x = wt::make_tensor_2d(x.data(), DType::f32, k, 2), .w = wt, .accumulate = true},
          "one row");
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .norm = row(nw), .gate = x1}, "norm and gate together");
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .norm = wt::make_tensor_2d(nw.data(), DType::f32, k / 2, 1)},
          "norm is shorter");
  refused(MatmulOp{.dst = wt::make_tensor_2d(x.data() + 4, DType::f32, out, 1), .x = x1, .w = wt, .accumulate = true},
          "overlaps");
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .gate = wt::make_tensor_2d(nw.data(), DType::f32, k / 2, 1)}, "gate");
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .bias = wt::make_tensor_2d(nw.data(), DType::f32, out - 1, 1)},
          "bias rows are too short");
  const int32_t pos = 3;
  const int64_t hne[3] = {4, 2, 1};  // out = 8: two heads of 4
  const wt::RopeOp r{.x = wt::make_tensor(y.data(), DType::f32, 3, hne), .positions = &pos, .n_rot = 4};
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .accumulate = true, .rope = r}, "rope with accumulate");
  wt::RopeOp elsewhere = r;
  elsewhere.x.data = y.data() + out;
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .rope = elsewhere}, "not dst's heads");
  wt::RopeOp no_pos = r;
  no_pos.positions = nullptr;
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .rope = no_pos}, "positions are missing");
  // RopeOp::angles: a row of cos and sin per pair (n_rot floats), a row for every row of x.
  wt::RopeOp short_angles = r;
  short_angles.angles = wt::make_tensor_2d(nw.data(), DType::f32, 2, 1);
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .rope = short_angles}, "angles rows must be n_rot long");
  wt::RopeOp no_angle_rows = r;
  no_angle_rows.angles = wt::make_tensor_2d(nw.data(), DType::f32, 4, 0);
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .rope = no_angle_rows}, "fewer angle rows");
  // glu: two products of one width (gate and up), apart, without accumulate or rope.
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .glu = true}, "glu takes two products");
  const Tensor y2 = wt::make_tensor_2d(y.data() + out, DType::f32, out, 1);
  const Tensor w_half = wt::make_tensor_2d(w.data(), DType::f32, k, out / 2);
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .dst2 = y2, .w2 = w_half, .glu = true}, "glu takes two products");
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .dst2 = y2, .w2 = wt, .accumulate = true, .glu = true},
          "glu with accumulate");
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .dst2 = wt::make_tensor_2d(y.data() + 1, DType::f32, out, 1), .w2 = wt,
                   .glu = true},
          "overlap");
  std::vector<float> wide(3 * out);  // dst 2 wider than the products: swiglu would run past them
  refused(MatmulOp{.dst = wt::make_tensor_2d(wide.data(), DType::f32, out + 2, 1), .x = x1, .w = wt,
                   .dst2 = wt::make_tensor_2d(wide.data() + out + 2, DType::f32, out, 1), .w2 = wt, .glu = true},
          "products' width");
  // Angles: a 2-D table (kernels read row r at r * nb[1]).
  wt::RopeOp angles_3d = r;
  const int64_t ane[3] = {4, 1, 1};
  angles_3d.angles = wt::make_tensor(nw.data(), DType::f32, 3, ane);
  angles_3d.angles.ne[3] = 2;
  refused(MatmulOp{.dst = y1, .x = x1, .w = wt, .rope = angles_3d}, "2-D table");
}

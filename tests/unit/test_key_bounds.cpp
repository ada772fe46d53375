// Quest's key bounds on the CPU (ops.def: key_bounds, bound_scores): the f16 rounding
// outward (kernels/f16_bound.h) against quant.h's own f16 conversion, the stored bounds
// against each block's exact min and max, and the scores against a naive double-precision
// softmax of bounds no key exceeds, on every ISA build and 1-3 workers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/kv_rows.h"
#include "kernels/cpu/ops_cpu.h"
#include "kernels/cpu/quant.h"
#include "kernels/f16_bound.h"
#include "support/random_tensor.h"
#include "support/run_workers.h"

namespace {

using wt::Tensor;
using wt::cpu::ThreadCtx;
using wt::test::at;
using wt::test::random_vec;
using wt::test::run_workers;
using wt::test::t3;
using wt::test::Workspace;

}  // namespace

// The f16 rounding of the key bounds (kernels/f16_bound.h) against quant.h's own f16
// conversion: down is the largest zero-or-normal f16 <= x and up the smallest >= x, for
// values around every binade of f16's range, its edges, zeros and subnormals; magnitudes
// above 65504 saturate.
TEST_CASE("prune ops: key bounds round to f16 outward, never to a subnormal, saturating above 65504") {
  auto value = [](uint16_t h) { return wt::cpu::f16_to_f32(h); };
  auto normal_or_zero = [](uint16_t h) { return (h & 0x7FFFu) == 0 || ((h >> 10) & 0x1Fu) != 0; };
  // Every finite zero-or-normal f16 value, ascending.
  std::vector<float> grid;
  for (uint32_t h = 0; h < 0x10000u; ++h)
    if (((h >> 10) & 0x1Fu) != 0x1Fu && normal_or_zero(static_cast<uint16_t>(h))) grid.push_back(value(static_cast<uint16_t>(h)));
  std::sort(grid.begin(), grid.end());
  std::vector<float> xs = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, -65504.0f, 65505.0f, 65520.0f, 1e9f, -1e9f,
                           INFINITY, -INFINITY, 0x1p-14f, -0x1p-14f, 0x1p-15f, -0x1p-24f, 1e-30f, -1e-30f};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  for (int e = -26; e <= 16; ++e)
    for (int i = 0; i < 200; ++i) {
      const float x = std::ldexp(mant(rng), e);
      xs.push_back(x);
      xs.push_back(-x);
    }
  for (float g : grid) {  // the grid's own values, exactly representable
    xs.push_back(g);
    xs.push_back(std::nextafter(g, INFINITY));
    xs.push_back(std::nextafter(g, -INFINITY));
  }
  int64_t bad = 0;
  for (float x : xs) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    for (bool up : {false, true}) {
      const uint16_t h = wt::f16_bound_bits(bits, up);
      const float got = value(h);
      // The stored value decodes the same way the kernels read it.
      const uint32_t scaled = wt::f16_bound_scaled_f32_bits(h);
      float f;
      std::memcpy(&f, &scaled, sizeof f);
      const bool decodes = f * wt::kF16BoundScale == got;
      float want;
      if (std::fabs(x) > 65504.0f)
        want = x > 0 ? 65504.0f : -65504.0f;  // saturated
      else if (up)
        want = *std::lower_bound(grid.begin(), grid.end(), x);  // the smallest >= x
      else
        want = *(std::upper_bound(grid.begin(), grid.end(), x) - 1);  // the largest <= x
      const bool ok = normal_or_zero(h) && decodes && got == want;
      if (!ok && bad++ < 5)
        MESSAGE("x " << x << (up ? " up" : " down") << ": got " << got << " (bits " << h << "), want " << want);
    }
  }
  CHECK(bad == 0);
}

struct BsIsaGuard {
  ~BsIsaGuard() { wt::cpu::set_bound_scores_isa_for_testing(nullptr); }
};

TEST_CASE("prune ops: key_bounds are each block's min and max, and bound_scores the log of the heads' softmax of bounds no key exceeds") {
  BsIsaGuard guard;
  struct Case {
    int64_t hd, n_head, n_head_kv, n;
    int32_t block;
    wt::DType kv;
    float scale;
  };
  const Case cases[] = {
      {64, 9, 3, 100, 16, wt::DType::f32, 0.125f},   // last block 4 rows
      {64, 14, 2, 37, 16, wt::DType::f16, 0.125f},
      {32, 4, 4, 9, 1, wt::DType::q8_0, 0.125f},     // one row per block: the bound is the key's own score
      {64, 2, 1, 5, 64, wt::DType::f32, 0.125f},     // one block, shorter than `block`
      // Bounds hundreds apart: an f32 softmax would be 0 for most blocks, the log stays exact.
      {64, 9, 3, 160, 16, wt::DType::f32, 40.0f},
      {30, 10, 2, 50, 4, wt::DType::f32, 0.2f},      // a head size not a multiple of 16 (or 4); groups of 5
      {64, 12, 2, 64, 8, wt::DType::f32, 0.125f},    // groups of 6 (Qwen2.5-1.5B)
      // The default model's decode step at ~4000 tokens: 1016 blocks (63 groups of 16 and a
      // tail of 8), enough exponentials and logs that a build fusing a multiply-add the
      // others do not shows in the bits.
      {64, 9, 3, 4061, 4, wt::DType::f16, 0.125f},
  };
  for (const Case& c : cases) {
    const uint32_t seed = static_cast<uint32_t>(c.n * 5 + c.block);
    auto q = random_vec(static_cast<size_t>(c.hd * c.n_head), seed);
    auto kf = random_vec(static_cast<size_t>(c.hd * c.n_head_kv * c.n), seed + 1);
    // The cache's rows in its type, and what they read back as (the values the bounds cover).
    size_t row_bytes = 0;
    REQUIRE(wt::dtype_row_bytes(c.kv, c.hd, &row_bytes));
    std::vector<char> cache(row_bytes * static_cast<size_t>(c.n_head_kv * c.n));
    std::vector<float> k(kf.size());
    for (int64_t r = 0; r < c.n_head_kv * c.n; ++r) {
      wt::cpu::kv_store_row(c.kv, kf.data() + r * c.hd, cache.data() + static_cast<size_t>(r) * row_bytes, c.hd);
      wt::cpu::dequantize(c.kv, cache.data() + static_cast<size_t>(r) * row_bytes, k.data() + r * c.hd, c.hd);
    }
    const int64_t kne[3] = {c.hd, c.n_head_kv, c.n};
    const Tensor tk = wt::make_tensor(cache.data(), c.kv, 3, kne);
    const int64_t n_blocks = (c.n + c.block - 1) / c.block, group = c.n_head / c.n_head_kv;
    const float scale = c.scale;
    // Every ISA build and every worker count give the same bits: the same partial sums in
    // the same order, whatever the split (each run's output is compared with the one before).
    // These bounds have lo <= hi; the parity cases give the op unordered ones.
    std::vector<float> out;
    for (int workers : {1, 2, 3}) {
      INFO("seed " << seed << " n " << c.n << " block " << c.block << " kv " << std::string(wt::dtype_name(c.kv)) << " workers " << workers);
      std::vector<uint16_t> halves(static_cast<size_t>(2 * c.hd * c.n_head_kv * n_blocks), 0x7E00);  // NaN
      const int64_t bne[3] = {2 * c.hd, c.n_head_kv, n_blocks};
      const Tensor tb = wt::make_tensor(halves.data(), wt::DType::f16, 3, bne);
      Workspace ws(wt::cpu::key_bounds_workspace_bytes(c.hd, workers));
      run_workers(workers, [&](const ThreadCtx& tc) { wt::cpu::key_bounds(tc, tb, tk, c.block, ws.p); });
      // Each block's exact min and max, rounded outward (the rounding is the test above's).
      bool exact = true, encloses = true;
      std::vector<float> bounds(halves.size());  // what the stored halves read back as
      for (int64_t b = 0; b < n_blocks; ++b)
        for (int64_t g = 0; g < c.n_head_kv; ++g)
          for (int64_t d = 0; d < c.hd; ++d) {
            float lo = INFINITY, hi = -INFINITY;
            for (int64_t r = b * c.block; r < std::min<int64_t>(c.n, (b + 1) * c.block); ++r) {
              lo = std::min(lo, k[at(d, g, r, c.hd, c.n_head_kv)]);
              hi = std::max(hi, k[at(d, g, r, c.hd, c.n_head_kv)]);
            }
            const size_t il = at(d, g, b, 2 * c.hd, c.n_head_kv), ih = at(c.hd + d, g, b, 2 * c.hd, c.n_head_kv);
            uint32_t lb, hb;
            std::memcpy(&lb, &lo, sizeof lb);
            std::memcpy(&hb, &hi, sizeof hb);
            exact &= halves[il] == wt::f16_bound_bits(lb, false) && halves[ih] == wt::f16_bound_bits(hb, true);
            bounds[il] = wt::cpu::f16_to_f32(halves[il]);
            bounds[ih] = wt::cpu::f16_to_f32(halves[ih]);
            encloses &= bounds[il] <= lo && bounds[ih] >= hi;
          }
      CHECK(exact);
      CHECK(encloses);

      for (const char* isa : {"base", "avx2", "avx512"}) {
        if (!wt::cpu::set_bound_scores_isa_for_testing(isa)) {
          MESSAGE("bound_scores: " << std::string(isa) << " not on this CPU, not tested");
          continue;
        }
        std::vector<float> o(static_cast<size_t>(n_blocks), -7.0f);
        // The kernel scores q's last row (a decode step's): a row before it that must not count.
        std::vector<float> q2 = random_vec(q.size(), seed + 2);
        q2.insert(q2.end(), q.begin(), q.end());
        const Tensor to = wt::make_tensor_2d(o.data(), wt::DType::f32, n_blocks, 1), tq = t3(q2, c.hd, c.n_head, 2);
        Workspace bws(wt::cpu::bound_scores_workspace_bytes(c.hd, c.n_head, c.n_head_kv, n_blocks, workers));
        run_workers(workers, [&](const ThreadCtx& tc) { wt::cpu::bound_scores(tc, to, tq, tb, scale, bws.p); });
        if (!out.empty())
          CHECK_MESSAGE(std::memcmp(o.data(), out.data(), o.size() * sizeof(float)) == 0, std::string(isa));
        out = o;  // the reference checks below read the last run's
      }
      bool bound_holds = true;
      // Per head the log-softmax over the blocks, then per block the log of the heads' sum,
      // both shifted by their maximum (double, no underflow).
      std::vector<double> logp(static_cast<size_t>(c.n_head * n_blocks));
      double u_max = 0;  // the bounds' size: f32 rounds them to ~1e-7 of it
      int32_t f32_zeros = 0;  // blocks whose f32 softmax in a head would be 0
      for (int64_t h = 0; h < c.n_head; ++h) {
        const int64_t g = h / group;
        std::vector<double> u(static_cast<size_t>(n_blocks));
        for (int64_t b = 0; b < n_blocks; ++b) {
          double s = 0;
          for (int64_t d = 0; d < c.hd; ++d) {
            const double qd = q[at(d, h, 0, c.hd, c.n_head)];
            s += std::max(qd * bounds[at(d, g, b, 2 * c.hd, c.n_head_kv)], qd * bounds[at(c.hd + d, g, b, 2 * c.hd, c.n_head_kv)]);
          }
          u[static_cast<size_t>(b)] = scale * s;
          u_max = std::max(u_max, std::fabs(scale * s));
          // The invariant the bound is for: no key of the block scores above it.
          for (int64_t r = b * c.block; r < std::min<int64_t>(c.n, (b + 1) * c.block); ++r) {
            double z = 0;
            for (int64_t d = 0; d < c.hd; ++d) z += double(q[at(d, h, 0, c.hd, c.n_head)]) * k[at(d, g, r, c.hd, c.n_head_kv)];
            bound_holds &= scale * z <= u[static_cast<size_t>(b)] + 1e-9;
          }
        }
        const double top = *std::max_element(u.begin(), u.end());
        double sum = 0;
        for (double x : u) sum += std::exp(x - top);
        for (double x : u) f32_zeros += std::exp(static_cast<float>(x - top)) == 0.0f ? 1 : 0;
        for (int64_t b = 0; b < n_blocks; ++b)
          logp[static_cast<size_t>(h * n_blocks + b)] = u[static_cast<size_t>(b)] - top - std::log(sum);
      }
      double worst = 0;
      for (int64_t b = 0; b < n_blocks; ++b) {
        double top = -INFINITY, sum = 0;
        for (int64_t h = 0; h < c.n_head; ++h) top = std::max(top, logp[static_cast<size_t>(h * n_blocks + b)]);
        for (int64_t h = 0; h < c.n_head; ++h) sum += std::exp(logp[static_cast<size_t>(h * n_blocks + b)] - top);
        worst = std::max(worst, std::fabs(out[static_cast<size_t>(b)] - (top + std::log(sum))) / (1.0 + u_max));
      }
      CHECK(bound_holds);
      CHECK(worst < 1e-5);
      if (c.scale > 1.0f) CHECK(f32_zeros > 0);  // the case is what its comment says
    }
  }
}

// With key ids (a pager's host tier: slot ids[r] holds row r, in no order) the bounds are
// those of the rows in order, bit for bit, for every worker count and cache type.
TEST_CASE("prune ops: key_bounds over key ids equal the bounds of the rows they name in order") {
  const int64_t hd = 64, n_head_kv = 3, n = 45, n_slots = 64;
  const int32_t block = 4;
  const int64_t n_blocks = (n + block - 1) / block;
  for (wt::DType type : {wt::DType::f32, wt::DType::f16, wt::DType::q8_0}) {
    size_t row_bytes = 0;
    REQUIRE(wt::dtype_row_bytes(type, hd, &row_bytes));
    const size_t pos_bytes = row_bytes * static_cast<size_t>(n_head_kv);
    const auto kf = random_vec(static_cast<size_t>(hd * n_head_kv * n), 77);
    std::vector<char> rows(pos_bytes * static_cast<size_t>(n)), slots(pos_bytes * static_cast<size_t>(n_slots), 0);
    for (int64_t r = 0; r < n_head_kv * n; ++r)
      wt::cpu::kv_store_row(type, kf.data() + r * hd, rows.data() + static_cast<size_t>(r) * row_bytes, hd);
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      ids[static_cast<size_t>(r)] = static_cast<int32_t>((5 + 13 * r) % n_slots);  // 13 is prime to 64: no repeat
      std::memcpy(slots.data() + static_cast<size_t>(ids[static_cast<size_t>(r)]) * pos_bytes,
                  rows.data() + static_cast<size_t>(r) * pos_bytes, pos_bytes);
    }
    const int64_t rne[3] = {hd, n_head_kv, n}, sne[3] = {hd, n_head_kv, n_slots}, bne[3] = {2 * hd, n_head_kv, n_blocks};
    const Tensor t_rows = wt::make_tensor(rows.data(), type, 3, rne), t_slots = wt::make_tensor(slots.data(), type, 3, sne);
    for (int workers : {1, 3}) {
      CAPTURE(std::string(wt::dtype_name(type)));
      CAPTURE(workers);
      std::vector<uint16_t> want(static_cast<size_t>(2 * hd * n_head_kv * n_blocks), 1), got(want.size(), 2);
      const Tensor tw = wt::make_tensor(want.data(), wt::DType::f16, 3, bne), tg = wt::make_tensor(got.data(), wt::DType::f16, 3, bne);
      Workspace ws(wt::cpu::key_bounds_workspace_bytes(hd, workers));
      run_workers(workers, [&](const ThreadCtx& tc) { wt::cpu::key_bounds(tc, tw, t_rows, block, ws.p); });
      run_workers(workers, [&](const ThreadCtx& tc) {
        wt::cpu::key_bounds(tc, tg, t_slots, block, ws.p, ids.data(), static_cast<int32_t>(n));
      });
      CHECK(got == want);
    }
  }
}

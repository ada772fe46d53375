// Per-op parity: every op of kernels/ops.def on every compiled non-CPU backend against the
// CPU reference, with seeded random inputs and the tolerances of parity_cases.cpp. An op
// a backend does not implement is a visible skip with its reason; one with neither an
// implementation nor a reason fails. Without any device the suite says so and exits with
// ctest's skip code (main.cpp), never a silent pass.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "backends/weight_types.h"
#include "harness.h"

namespace {

using namespace wt;
using namespace wt::parity;

uint32_t base_seed() {
  const char* s = std::getenv("WT_PARITY_SEED");  // rerun a failure with the seed it printed
  return s ? static_cast<uint32_t>(std::strtoul(s, nullptr, 10)) : 20261122u;
}

// The backend to test, or nullptr with the skip already reported.
std::unique_ptr<Backend> make_backend(const BackendMaker& m) {
  BackendOptions o;
  o.validation = validation_requested();
  std::unique_ptr<Backend> b;
  const Status st = m.create(o, &b);
  if (st.code() == WT_ERR_UNSUPPORTED) {
    MESSAGE("SKIP " << std::string(m.name) << ": " << st.message());
    std::printf("SKIP %s: %s\n", m.name, st.message().c_str());  // shown by ctest -V
    return nullptr;
  }
  REQUIRE_MESSAGE(st.is_ok(), m.name << ": " << st.message());
  return b;
}

// The weight type of c's inputs that backend m does not read (its weight_types_of), or
// nullptr: such cases are skipped there and run where the type is read.
const char* unread_weight_type(const BackendMaker& m, const Case& c) {
  const wt_backend_kind kind = std::string(m.name) == "cuda" ? WT_BACKEND_CUDA : WT_BACKEND_VULKAN;
  for (const TensorSpec& s : c.src)
    if (s.type != DType::f32 && !(weight_types_of(kind) & dtype_bit(s.type))) return dtype_name(s.type);
  return nullptr;
}

// Under the validation layer only the API calls are checked, and a case's calls do not grow
// with its shape: the layer adds nothing measurable (attention_prefill: 50.6 s with it, 50.5 s
// without, 2026-11-29), the minutes are lavapipe's arithmetic on the large cases, which the
// plain parity run compares anyway. So the validation run takes the cases of at most this
// many elements (dst and sources together), and always an op's smallest.
constexpr int64_t kValidationElements = int64_t{1} << 17;

int64_t elements(const Case& c) {
  int64_t n = 0;
  for (const TensorSpec* t : {&c.dst, &c.src[0], &c.src[1], &c.src[2]})
    if (t->used) n += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
  return n;
}

// The cases of op this run takes: all of them, or those the validation run keeps.
std::vector<Case> run_cases(Op op) {
  std::vector<Case> all = cases(op);
  if (!validation_requested() || all.empty()) return all;
  const auto smallest = std::min_element(all.begin(), all.end(),
                                         [](const Case& a, const Case& b) { return elements(a) < elements(b); });
  const int64_t limit = std::max(kValidationElements, elements(*smallest));
  const size_t n_all = all.size();
  std::erase_if(all, [&](const Case& c) { return elements(c) > limit; });
  MESSAGE("validation run: " << all.size() << " of " << n_all << " " << std::string(op_name(op))
                             << " cases (up to " << limit << " elements; the plain parity run compares every case)");
  return all;
}

void run_op(Op op) {
  const std::vector<Case> all = run_cases(op);
  const Tolerance* tol = tolerance(op);
  REQUIRE_MESSAGE(!all.empty(), std::string(op_name(op)) << " has no parity cases");
  REQUIRE_MESSAGE(tol != nullptr, std::string(op_name(op)) << " has no tolerance");
  std::unique_ptr<Backend> cpu;
  BackendOptions co;
  co.n_threads = 2;
  REQUIRE(create_cpu_backend(co, &cpu).is_ok());

  // The CPU reference of every case, run even where no backend will compare with it, so
  // every case is checked to be a valid call (ASan runs this too).
  std::vector<Outputs> refs(all.size());
  std::vector<CaseData> data(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    data[i] = make_data(all[i], base_seed() + static_cast<uint32_t>(i));
    const Status st = run_case(*cpu, all[i], data[i], 0, &refs[i]);
    REQUIRE_MESSAGE(st.is_ok(), "cpu " << std::string(op_name(op)) << " " << all[i].label << ": " << st.message());
  }

  const std::vector<BackendMaker> makers = compiled_backends();
  if (makers.empty()) {
    MESSAGE("SKIP " << std::string(op_name(op)) << ": no non-CPU backend in this build (configure with -DWHITTLE_VULKAN=ON or -DWHITTLE_CUDA=ON)");
    g_skipped = true;
    return;
  }
  int n_ran = 0;
  for (const BackendMaker& m : makers) {
    std::unique_ptr<Backend> b = make_backend(m);
    if (!b) continue;
    const char* reason = nullptr;
    if (!b->supports(op, &reason)) {
      CHECK_MESSAGE((reason && *reason), m.name << " neither implements " << std::string(op_name(op)) << " nor says why");
      MESSAGE("SKIP " << std::string(m.name) << " " << std::string(op_name(op)) << ": " << std::string(reason ? reason : "(no reason)"));
      std::printf("SKIP %s %s: %s\n", m.name, op_name(op), reason ? reason : "(no reason)");
      continue;  // if no backend runs the op, ctest shows this test as Skipped
    }
    ++n_ran;
    g_ran = true;
    double worst_nmse = 0.0, worst_abs = 0.0, worst_tc_nmse = 0.0, worst_tc_abs = 0.0;
    int n_tc = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      const Case& c = all[i];
      const uint32_t seed = base_seed() + static_cast<uint32_t>(i);
      INFO(std::string(m.name) << " " << std::string(op_name(op)) << " [" << c.label << "] seed " << seed);
      if (const char* t = unread_weight_type(m, c)) {
        MESSAGE("SKIP " << std::string(m.name) << " " << std::string(op_name(op)) << " [" << c.label << "]: reads no " << std::string(t)
                        << " weights (backends/weight_types.cpp)");
        continue;
      }
      if (!(b->caps().kv_types & dtype_bit(c.kv_type))) {
        MESSAGE("SKIP " << std::string(m.name) << " " << std::string(op_name(op)) << " [" << c.label << "]: keeps no KV cache of "
                        << std::string(dtype_name(c.kv_type)) << " (backends/weight_types.cpp kv_types_of)");
        continue;
      }
      if (c.gemma && !b->caps().gemma_kernels) {
        MESSAGE("SKIP " << std::string(m.name) << " " << std::string(op_name(op)) << " [" << c.label
                        << "]: no embedding scale, gelu or attention window (BackendCaps::gemma_kernels)");
        continue;
      }
      if (b->caps().fused_matmul_k < c.fused_k) {
        MESSAGE("SKIP " << std::string(m.name) << " " << std::string(op_name(op)) << " [" << c.label
                        << "]: no fused matmul (BackendCaps::fused_matmul_k " << b->caps().fused_matmul_k << ")");
        continue;
      }
      Outputs got;
      const Status st = run_case(*b, c, data[i], 4 * (i % 4), &got);  // pads 0..12: unaligned bindings
      REQUIRE_MESSAGE(st.is_ok(), st.message());
      const Error e = compare(got, refs[i]);
      CHECK_FALSE(e.size_mismatch);
      CHECK(e.n_int_mismatch == 0);
      const auto [lim_nmse, lim_abs] = limits(*tol, c, m.name);
      const bool tc = on_tensor_cores(c, m.name);
      CHECK(e.nmse <= lim_nmse);
      CHECK(e.max_abs <= lim_abs);
      MESSAGE(std::string(m.name) << " " << std::string(op_name(op)) << " [" << c.label << "]" << std::string(tc ? " (tensor cores)" : "")
                     << " nmse " << e.nmse << " max-abs " << e.max_abs
                     << (c.n_out_i ? " int mismatches " + std::to_string(e.n_int_mismatch) : std::string()));
      double& wn = tc ? worst_tc_nmse : worst_nmse;
      double& wa = tc ? worst_tc_abs : worst_abs;
      wn = e.nmse > wn ? e.nmse : wn;
      wa = e.max_abs > wa ? e.max_abs : wa;
      n_tc += tc;
    }
    MESSAGE("PARITY " << std::string(m.name) << " " << std::string(op_name(op)) << ": " << all.size() << " cases, worst nmse " << std::string(n_tc ? "off tensor cores " : "") << worst_nmse
                      << " (limit " << tol->nmse << "), worst max-abs " << worst_abs << " (limit " << tol->max_abs
                      << ")");
    if (n_tc > 0)
      MESSAGE("PARITY " << std::string(m.name) << " " << std::string(op_name(op)) << ": " << n_tc
                        << " of them on tensor cores, worst nmse " << worst_tc_nmse << " (limit " << tol->tc_nmse
                        << "), worst max-abs " << worst_tc_abs << " (limit " << tol->tc_max_abs << ")");
  }
  if (n_ran == 0) g_skipped = true;
}

}  // namespace

TEST_SUITE("parity") {
  TEST_CASE("parity: every op has cases and a tolerance and per backend an implementation or a reason") {
    for (uint32_t i = 0; i < static_cast<uint32_t>(Op::count); ++i) {
      const Op op = static_cast<Op>(i);
      CHECK_MESSAGE(!cases(op).empty(), std::string(op_name(op)) << " has no parity cases");
      CHECK_MESSAGE(tolerance(op) != nullptr, std::string(op_name(op)) << " has no tolerance");
    }
    const std::vector<BackendMaker> makers = compiled_backends();
    if (makers.empty()) {
      MESSAGE("SKIP: no non-CPU backend in this build (configure with -DWHITTLE_VULKAN=ON or -DWHITTLE_CUDA=ON)");
      g_skipped = true;
      return;
    }
    int n_ran = 0;
    for (const BackendMaker& m : makers) {
      std::unique_ptr<Backend> b = make_backend(m);
      if (!b) continue;
      ++n_ran;
      for (uint32_t i = 0; i < static_cast<uint32_t>(Op::count); ++i) {
        const char* reason = nullptr;
        const bool ok = b->supports(static_cast<Op>(i), &reason);
        CHECK_MESSAGE((ok || (reason && *reason)), m.name << " " << std::string(op_name(static_cast<Op>(i)))
                                                          << ": neither implemented nor given a reason");
      }
    }
    if (n_ran == 0) g_skipped = true;
  }

#define WT_OP(name, Args) \
  TEST_CASE("parity: " #name) { run_op(Op::name); }
#include "kernels/ops.def"
#undef WT_OP
}

#include "compute_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace {

// Each loop keeps 12 independent accumulator chains: enough to cover FMA latency x ports on
// current cores, so the loop is bound by issue width, not by a dependency.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) float fma_avx512(int64_t iters) {
  __m512 a[12];
  for (int k = 0; k < 12; ++k) a[k] = _mm512_set1_ps(1.0f + 0.01f * static_cast<float>(k));
  const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < 12; ++k) a[k] = _mm512_fmadd_ps(a[k], m, c);
  __m512 s = a[0];
  for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, a[k]);
  float out[16];  // (GCC 12's _mm512_reduce_add_ps warns about its own temporaries)
  _mm512_storeu_ps(out, s);
  return out[0] + out[15];
}

__attribute__((target("avx2,fma"))) float fma_avx2(int64_t iters) {
  __m256 a[12];
  for (int k = 0; k < 12; ++k) a[k] = _mm256_set1_ps(1.0f + 0.01f * static_cast<float>(k));
  const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < 12; ++k) a[k] = _mm256_fmadd_ps(a[k], m, c);
  __m256 s = a[0];
  for (int k = 1; k < 12; ++k) s = _mm256_add_ps(s, a[k]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

__attribute__((target("avx512f,avx512vnni"))) float dot_vnni(int64_t iters) {
  __m512i a[12];
  for (int k = 0; k < 12; ++k) a[k] = _mm512_set1_epi32(k);
  const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < 12; ++k) a[k] = _mm512_dpbusd_epi32(a[k], u, s);
  __m512i t = a[0];
  for (int k = 1; k < 12; ++k) t = _mm512_add_epi32(t, a[k]);
  int32_t out[16];
  _mm512_storeu_si512(out, t);
  return static_cast<float>(out[0] + out[15]);
}
#elif defined(__aarch64__)
float fma_neon(int64_t iters) {
  float32x4_t a[12];
  for (int k = 0; k < 12; ++k) a[k] = vdupq_n_f32(1.0f + 0.01f * static_cast<float>(k));
  const float32x4_t m = vdupq_n_f32(0.9999999f), c = vdupq_n_f32(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < 12; ++k) a[k] = vfmaq_f32(c, a[k], m);
  float32x4_t s = a[0];
  for (int k = 1; k < 12; ++k) s = vaddq_f32(s, a[k]);
  return vaddvq_f32(s);
}
#endif

// Median over 5 runs of (ops per iteration x iterations x threads) / wall time, in G/s.
double rate(int n_threads, int64_t iters, double ops_per_iter, float (*fn)(int64_t)) {
  std::vector<double> runs;
  volatile float sink = 0;
  for (int r = 0; r < 5; ++r) {
    std::vector<float> out(static_cast<size_t>(n_threads));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> th;
    try {
      for (int t = 0; t < n_threads; ++t) th.emplace_back([&, t] { out[static_cast<size_t>(t)] = fn(iters); });
    } catch (const std::system_error&) {
      for (auto& x : th) x.join();  // a joinable thread destroyed would terminate
      throw;
    }
    for (auto& x : th) x.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (float v : out) sink = sink + v;
    runs.push_back(ops_per_iter * static_cast<double>(iters) * n_threads / s / 1e9);
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

}  // namespace

ComputePeak measure_compute_peak(int n_threads) {
  ComputePeak p;
  const int64_t iters = 2000000;  // ~0.1-0.2 s per run on a current core
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) {
    p.fp32_gflops = rate(n_threads, iters, 12 * 16 * 2, fma_avx512);
    p.fp32_isa = "avx512";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    p.fp32_gflops = rate(n_threads, iters, 12 * 8 * 2, fma_avx2);
    p.fp32_isa = "avx2";
  }
  if (__builtin_cpu_supports("avx512vnni")) {
    p.int8_gops = rate(n_threads, iters, 12 * 64 * 2, dot_vnni);
    p.int8_isa = "avx512vnni";
  }
#elif defined(__aarch64__)
  p.fp32_gflops = rate(n_threads, iters, 12 * 4 * 2, fma_neon);
  p.fp32_isa = "neon";
#endif
  return p;
}

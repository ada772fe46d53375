// Micro-benchmark of the CPU decode attention (not a test): one decode step's attention
// over a cache of N keys in every layer of the default model's shape (SmolLM2-135M: 30
// layers, 9/3 heads of 64), per ISA build this CPU has and per KV type; median of
// repetitions, and the cache's bytes per millisecond.
//
//   bench_attention [--keys N] [--threads N] [--reps N] [--heads 14/2 --layers 24] [--bounds B]
//                   [--isa avx512|avx2|base] [--kv f32|f16|q8_0] [--prefill]
//
// --isa and --kv time one build or one KV type only (for a profile of one kernel).
//
// --bounds B also times decode_topk's scoring step per ISA build of bound_scores: one query
// row against the f16 key bounds of blocks of B keys (made by key_bounds from the f16
// cache), every layer, beside the f16 attention over every key of the same build.
//
// --prefill times the prefill attention instead: one layer's N query rows over N keys
// (causal, as a prompt of N tokens attends), in GFLOP/s of the causal triangle's scores
// and value sums (4 n_head hd N (N + 1) / 2 flops).
//
// --heads and --layers give another model's shape (head size 64): 14/2 and 24 layers are
// Qwen2.5-0.5B's, whose GQA group of 7 query heads reads each cache row for all of them.
// Every layer has its own K and V (the ~180 MiB of f32 KV at 4096 keys), so the cache
// streams from memory as in a real token step.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/ops_cpu.h"
#include "kernels/cpu/quant.h"
#include "support/run_workers.h"

namespace {

constexpr int64_t kHeadDim = 64;
int64_t kHeads = 9, kKvHeads = 3, kLayers = 30;  // the default model's; --heads, --layers
std::string g_only_isa;                           // --isa: one build only (empty: all)

// One layer's K or V of n_keys rows in the given type, from uniform values in [-1, 1].
std::vector<uint8_t> make_cache(wt::DType type, int64_t n_keys, std::mt19937& rng) {
  const int64_t n = kHeadDim * kKvHeads * n_keys;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = u(rng);
  size_t bytes = 0;
  if (!wt::dtype_row_bytes(type, n, &bytes)) std::abort();
  std::vector<uint8_t> out(bytes);
  if (type == wt::DType::f32) {
    std::memcpy(out.data(), x.data(), bytes);
  } else if (type == wt::DType::f16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t h = wt::cpu::f32_to_f16(x[static_cast<size_t>(i)]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  } else {
    wt::cpu::quantize_q8_0(x.data(), out.data(), n);
  }
  return out;
}

// Milliseconds, median of reps, of fn() run on `threads` workers.
template <class Fn>
double median_ms(int threads, int reps, Fn&& fn) {
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    wt::test::run_workers(threads, fn);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// decode_topk's scoring of one step (--bounds): bound_scores over every layer's f16 bounds
// of blocks of `block` keys, per ISA build of bound_scores. The attention rows above are the
// step of full KV it replaces.
void bench_bounds(int64_t n_keys, int block, int threads, int reps, const wt::Tensor& tq, std::mt19937& rng) {
  const int64_t n_blocks = (n_keys + block - 1) / block;
  const int64_t ne_kv[3] = {kHeadDim, kKvHeads, n_keys}, ne_b[3] = {2 * kHeadDim, kKvHeads, n_blocks};
  std::vector<std::vector<uint16_t>> bounds;
  std::vector<char> kws(wt::cpu::key_bounds_workspace_bytes(kHeadDim, threads) + 64);
  void* kwsp = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(kws.data()) + 63) & ~uintptr_t(63));
  for (int64_t l = 0; l < kLayers; ++l) {
    std::vector<uint8_t> k = make_cache(wt::DType::f16, n_keys, rng);
    bounds.emplace_back(static_cast<size_t>(2 * kHeadDim * kKvHeads * n_blocks));
    const wt::Tensor tk = wt::make_tensor(k.data(), wt::DType::f16, 3, ne_kv);
    const wt::Tensor tb = wt::make_tensor(bounds.back().data(), wt::DType::f16, 3, ne_b);
    wt::test::run_workers(threads, [&](const wt::cpu::ThreadCtx& tc) { wt::cpu::key_bounds(tc, tb, tk, block, kwsp); });
  }
  std::vector<float> scores(static_cast<size_t>(n_blocks));
  const wt::Tensor to = wt::make_tensor_2d(scores.data(), wt::DType::f32, n_blocks, 1);
  std::vector<char> ws(wt::cpu::bound_scores_workspace_bytes(kHeadDim, kHeads, kKvHeads, n_blocks, threads) + 64);
  void* wsp = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.data()) + 63) & ~uintptr_t(63));
  std::printf("\ndecode_topk's bound scores, blocks of %d (%lld blocks) x %lld layers, median of %d\n\n", block,
              static_cast<long long>(n_blocks), static_cast<long long>(kLayers), reps);
  std::printf("| ISA | ms per token | bounds MiB |\n|---|---|---|\n");
  const double mib = static_cast<double>(kLayers) * static_cast<double>(bounds[0].size()) * 2.0 / (1024.0 * 1024.0);
  for (const char* isa : {"avx512", "avx2", "base"}) {
    if (!g_only_isa.empty() && g_only_isa != isa) continue;
    if (!wt::cpu::set_bound_scores_isa_for_testing(isa)) continue;
    const double med = median_ms(threads, reps, [&](const wt::cpu::ThreadCtx& tc) {
      for (int64_t l = 0; l < kLayers; ++l) {
        const wt::Tensor tb = wt::make_tensor(bounds[static_cast<size_t>(l)].data(), wt::DType::f16, 3, ne_b);
        wt::cpu::bound_scores(tc, to, tq, tb, 0.125f, wsp);
        tc.sync();  // the next layer reuses the workspace
      }
    });
    std::printf("| %s | %.2f | %.1f |\n", isa, med, mib);
  }
  wt::cpu::set_bound_scores_isa_for_testing(nullptr);
}

// --prefill: one layer's prompt of n tokens, every query row over its causal keys.
void bench_prefill(int64_t n, int threads, int reps, const std::string& only_isa, const std::string& only_kv,
                   std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(kHeadDim * kHeads * n)), out(q.size());
  for (float& x : q) x = u(rng);
  std::vector<char> ws(wt::cpu::attention_workspace_bytes(kHeadDim, kHeads, kKvHeads, threads) + 64);
  void* wsp = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.data()) + 63) & ~uintptr_t(63));
  const int64_t ne_q[3] = {kHeadDim, kHeads, n}, ne_kv[3] = {kHeadDim, kKvHeads, n};
  const wt::Tensor tq = wt::make_tensor(q.data(), wt::DType::f32, 3, ne_q);
  const wt::Tensor to = wt::make_tensor(out.data(), wt::DType::f32, 3, ne_q);
  const double gflop = 4.0 * static_cast<double>(kHeads * kHeadDim) * static_cast<double>(n) *
                       static_cast<double>(n + 1) / 2.0 / 1e9;
  std::printf("prefill attention, %lld tokens, one layer, heads %lld/%lld, %d threads, median of %d\n\n",
              static_cast<long long>(n), static_cast<long long>(kHeads), static_cast<long long>(kKvHeads), threads,
              reps);
  std::printf("| ISA | KV | ms per layer | GFLOP/s |\n|---|---|---|---|\n");
  for (wt::DType type : {wt::DType::f32, wt::DType::f16, wt::DType::q8_0}) {
    if (!only_kv.empty() && only_kv != (type == wt::DType::f32 ? "f32" : type == wt::DType::f16 ? "f16" : "q8_0"))
      continue;
    std::vector<uint8_t> k = make_cache(type, n, rng), v = make_cache(type, n, rng);
    const wt::Tensor tk = wt::make_tensor(k.data(), type, 3, ne_kv);
    const wt::Tensor tv = wt::make_tensor(v.data(), type, 3, ne_kv);
    for (const char* isa : {"avx512", "avx2", "base"}) {
      if (!only_isa.empty() && only_isa != isa) continue;
      if (!wt::cpu::set_attention_isa_for_testing(isa)) continue;
      const double med = median_ms(threads, reps, [&](const wt::cpu::ThreadCtx& tc) {
        wt::cpu::attention_prefill(tc, to, tq, tk, tv, 0, 0.125f, wsp);
      });
      std::printf("| %s | %s | %.2f | %.1f |\n", isa, wt::dtype_name(type), med, gflop / (med * 1e-3));
    }
  }
  wt::cpu::set_attention_isa_for_testing(nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n_keys = 4096;
  int threads = 2, reps = 9, bounds_block = 0;
  bool prefill = false;
  std::string only_isa, only_kv;  // empty: all
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--keys" && i + 1 < argc) n_keys = std::atoll(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--layers" && i + 1 < argc) kLayers = std::atoll(argv[++i]);
    else if (a == "--bounds" && i + 1 < argc) bounds_block = std::atoi(argv[++i]);
    else if (a == "--isa" && i + 1 < argc) only_isa = argv[++i];
    else if (a == "--kv" && i + 1 < argc) only_kv = argv[++i];
    else if (a == "--prefill") prefill = true;
    else if (a == "--heads" && i + 1 < argc &&
             std::sscanf(argv[i + 1], "%lld/%lld", reinterpret_cast<long long*>(&kHeads),
                         reinterpret_cast<long long*>(&kKvHeads)) == 2)
      ++i;
    else {
      std::fprintf(stderr, "usage: %s [--keys N] [--threads N] [--reps N] [--heads H/HKV] [--layers N] [--bounds B] "
                   "[--isa avx512|avx2|base] [--kv f32|f16|q8_0] [--prefill]\n",
                   argv[0]);
      return a == "--help" ? 0 : 2;
    }
  }
  const bool isa_ok = only_isa.empty() || only_isa == "avx512" || only_isa == "avx2" || only_isa == "base";
  const bool kv_ok = only_kv.empty() || only_kv == "f32" || only_kv == "f16" || only_kv == "q8_0";
  if (!isa_ok || !kv_ok) {
    std::fprintf(stderr, "--isa takes avx512, avx2 or base; --kv f32, f16 or q8_0\n");
    return 2;
  }
  if (n_keys < 1 || threads < 1 || reps < 1 || kLayers < 1 || kKvHeads < 1 || kHeads < kKvHeads ||
      kHeads % kKvHeads != 0 || kHeads > 64 || bounds_block < 0) {
    std::fprintf(stderr, "--keys, --threads, --reps and --layers must be positive, --heads H/HKV with HKV dividing H <= 64, "
                         "--bounds not negative\n");
    return 2;
  }
  g_only_isa = only_isa;
  std::mt19937 rng(1);
  if (prefill) {
    bench_prefill(n_keys, threads, reps, only_isa, only_kv, rng);
    return 0;
  }
  std::vector<float> q(kHeadDim * kHeads), out(q.size());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : q) v = u(rng);
  std::vector<char> ws(wt::cpu::attention_workspace_bytes(kHeadDim, kHeads, kKvHeads, threads) + 64);
  void* wsp = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.data()) + 63) & ~uintptr_t(63));
  const int64_t ne_q[3] = {kHeadDim, kHeads, 1}, ne_kv[3] = {kHeadDim, kKvHeads, n_keys};
  const wt::Tensor tq = wt::make_tensor(q.data(), wt::DType::f32, 3, ne_q);
  const wt::Tensor to = wt::make_tensor(out.data(), wt::DType::f32, 3, ne_q);
  std::printf("decode attention, %lld keys x %lld layers, heads %lld/%lld, %d threads, median of %d\n\n",
              static_cast<long long>(n_keys), static_cast<long long>(kLayers), static_cast<long long>(kHeads),
              static_cast<long long>(kKvHeads), threads, reps);
  std::printf("| ISA | KV | ms per token | KV MiB | GB/s |\n|---|---|---|---|---|\n");
  for (wt::DType type : {wt::DType::f32, wt::DType::f16, wt::DType::q8_0}) {
    if (!only_kv.empty() && only_kv != (type == wt::DType::f32 ? "f32" : type == wt::DType::f16 ? "f16" : "q8_0"))
      continue;
    std::vector<std::vector<uint8_t>> k, v;
    for (int64_t l = 0; l < kLayers; ++l) {
      k.push_back(make_cache(type, n_keys, rng));
      v.push_back(make_cache(type, n_keys, rng));
    }
    const double mib = 2.0 * kLayers * static_cast<double>(k[0].size()) / (1024.0 * 1024.0);
    for (const char* isa : {"avx512", "avx2", "base"}) {
      if (!only_isa.empty() && only_isa != isa) continue;
      if (!wt::cpu::set_attention_isa_for_testing(isa)) continue;
      const double med = median_ms(threads, reps, [&](const wt::cpu::ThreadCtx& tc) {
        for (int64_t l = 0; l < kLayers; ++l) {
          const wt::Tensor tk = wt::make_tensor(k[l].data(), type, 3, ne_kv);
          const wt::Tensor tv = wt::make_tensor(v[l].data(), type, 3, ne_kv);
          wt::cpu::attention_decode(tc, to, tq, tk, tv, static_cast<int32_t>(n_keys - 1), 0.125f, wsp);
          tc.sync();  // the next layer reuses the workspace
        }
      });
      std::printf("| %s | %s | %.3f | %.1f | %.1f |\n", isa, wt::dtype_name(type), med, mib,
                  mib * 1024.0 * 1024.0 / (med * 1e6));
    }
  }
  wt::cpu::set_attention_isa_for_testing(nullptr);
  if (bounds_block > 0) bench_bounds(n_keys, bounds_block, threads, reps, tq, rng);
  return 0;
}

#include "logits_fixture.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace wt::test {

namespace {

uint64_t fnv1a(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

bool fail(std::string* err, const std::string& what) {
  *err = what + ": " + wt_last_error();
  return false;
}

int32_t argmax(const float* v, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i) best = v[i] > v[best] ? i : best;
  return best;
}

}  // namespace

std::vector<LogitsCase> logits_cases() {
  std::vector<LogitsCase> cases;
  // The parameters are those of b83939d, which made the fixture: SnapKV, FastKV, ASL and
  // CLAA pooled with a kernel of 7 then (their default is 31 since issue 26).
  const std::string old_pool = "7";
  const auto with_old_pool = [&](const std::string& m, LogitsCase c) {
    if (m == "snapkv" || m == "fastkv" || m == "asl" || m == "claa") c.params.push_back({"pool_kernel", old_pool});
    return c;
  };
  for (const char* m : {"full", "streaming", "snapkv", "fastkv", "gemfilter", "asl", "claa", "sliminfer",
                        "tokenfilter", "oracle"})
    cases.push_back(with_old_pool(m, {m, {{"method", m}, {"keep", "0.2"}}, 0}));
  // The forward loop's other modes: decode re-selection (SlimInfer's active blocks), ASL's
  // second pass, and KV in the pager's blocks (a device pool of three layers' blocks).
  cases.push_back({"sliminfer+decode_keep", {{"method", "sliminfer"}, {"keep", "0.2"}, {"slim_decode_keep", "0.25"}}, 0});
  cases.push_back(with_old_pool("asl", {"asl+two_pass", {{"method", "asl"}, {"keep", "0.2"}, {"asl_two_pass", "1"}}, 0}));
  cases.push_back({"full+pager", {{"method", "full"}}, 3});
  cases.push_back({"sliminfer+decode_keep+pager",
                   {{"method", "sliminfer"}, {"keep", "0.2"}, {"slim_decode_keep", "0.25"}}, 3});
  cases.push_back(with_old_pool("fastkv", {"fastkv+pager", {{"method", "fastkv"}, {"keep", "0.2"}}, 3}));
  return cases;
}

std::string logits_isa() {
  std::string s;
#if defined(__x86_64__)
  __builtin_cpu_init();
  const std::pair<const char*, bool> feats[] = {
      {"avx2", __builtin_cpu_supports("avx2")},           {"fma", __builtin_cpu_supports("fma")},
      {"f16c", __builtin_cpu_supports("f16c")},           {"avx512f", __builtin_cpu_supports("avx512f")},
      {"avx512bw", __builtin_cpu_supports("avx512bw")},   {"avx512vl", __builtin_cpu_supports("avx512vl")},
      {"avx512vnni", __builtin_cpu_supports("avx512vnni")},
  };
  for (const auto& [name, on] : feats) {
    if (!on) continue;
    if (!s.empty()) s += '+';  // piecewise: GCC 12's -Wrestrict misfires on "" + string
    s += name;
  }
  return "x86_64:" + (s.empty() ? std::string("base") : s);
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "other";
#endif
}

std::string logits_prompt_text() {
  std::ifstream lic("/usr/share/common-licenses/GPL-3");
  std::stringstream ss;
  ss << lic.rdbuf();
  return ss.str();
}

bool run_logits_case(const wt_model* model, const std::vector<wt_token>& prompt, const LogitsCase& c,
                     LogitsPrint* out, std::string* err) {
  wt_model_info info;
  if (wt_model_get_info(model, &info) != WT_OK) return fail(err, "model info");
  wt_context_params cp = wt_context_default_params();
  cp.n_threads = 2;
  cp.n_ctx = static_cast<int32_t>(prompt.size()) + kLogitsDecodeSteps + 64;  // the oracle's answer too
  cp.kv_type = WT_KV_F32;  // b83939d's cache (f16 is the default since 2026-12-02)
  for (const auto& [k, v] : c.params)
    if (wt_prune_set_param(&cp.prune, k.c_str(), v.c_str()) != WT_OK) return fail(err, c.name + ": " + k);
  if (c.kv_device_blocks > 0) {
    cp.kv_block_tokens = 64;
    cp.kv_device_blocks = c.kv_device_blocks * ((cp.n_ctx + 63) / 64);
  }
  wt_context* ctx = nullptr;
  if (wt_context_create(model, &cp, &ctx) != WT_OK) return fail(err, c.name + ": context");
  out->name = c.name;
  out->hashes.clear();
  out->tokens.clear();
  bool ok = wt_context_prefill(ctx, prompt.data(), prompt.size()) == WT_OK;
  for (int32_t step = 0; ok && step <= kLogitsDecodeSteps; ++step) {
    const float* logits = nullptr;
    ok = wt_context_logits(ctx, -1, &logits) == WT_OK;
    if (!ok) break;
    out->hashes.push_back(fnv1a(logits, sizeof(float) * static_cast<size_t>(info.n_vocab)));
    const wt_token t = argmax(logits, info.n_vocab);
    out->tokens.push_back(t);
    if (step < kLogitsDecodeSteps) ok = wt_context_decode(ctx, t) == WT_OK;
  }
  if (!ok) {
    fail(err, c.name + ": prefill/decode");
    wt_context_free(ctx);
    return false;
  }
  wt_context_free(ctx);
  return true;
}

bool write_logits_fixture(const std::string& path, const std::string& isa, const std::vector<LogitsPrint>& prints,
                          std::string* err) {
  std::ofstream f(path);
  if (!f) {
    *err = "cannot write " + path;
    return false;
  }
  f << "isa " << isa << "\n";
  for (const LogitsPrint& p : prints) {
    f << "case " << p.name;
    char buf[24];
    for (uint64_t h : p.hashes) {
      std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
      f << " " << buf;
    }
    f << " |";
    for (wt_token t : p.tokens) f << " " << t;
    f << "\n";
  }
  return static_cast<bool>(f);
}

bool read_logits_fixture(const std::string& path, std::string* isa, std::vector<LogitsPrint>* prints,
                         std::string* err) {
  std::ifstream f(path);
  if (!f) {
    *err = "cannot read " + path;
    return false;
  }
  std::string line;
  prints->clear();
  while (std::getline(f, line)) {
    std::istringstream ls(line);
    std::string tag;
    ls >> tag;
    if (tag == "isa") {
      ls >> *isa;
      continue;
    }
    if (tag != "case") continue;
    LogitsPrint p;
    ls >> p.name;
    std::string w;
    bool tokens = false;
    while (ls >> w) {
      if (w == "|") {
        tokens = true;
      } else if (tokens) {
        p.tokens.push_back(static_cast<wt_token>(std::stol(w)));
      } else {
        p.hashes.push_back(std::stoull(w, nullptr, 16));
      }
    }
    prints->push_back(p);
  }
  if (prints->empty()) {
    *err = path + " holds no case";
    return false;
  }
  return true;
}

}  // namespace wt::test

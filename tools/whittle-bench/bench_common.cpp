#include "bench_common.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "bandwidth_probe.h"
#include "tools/common/flags.h"

const char* whittle_bench_commit();  // build_info.cpp, generated at build time

namespace bench {

Tokens BenchModel::tokenize(const std::string& text, bool add_special) const {
  Tokens t(text.size() + 16);
  size_t n = 0;
  wt_tokenize_params tp = wt_tokenize_default_params();
  tp.add_special = add_special;
  if (wt_tokenize(model, text.data(), text.size(), &tp, t.data(), t.size(), &n) != WT_OK) n = 0;
  t.resize(n);
  return t;
}

Tokenizer BenchModel::tokenizer() const {
  return [this](const std::string& s, bool special) { return tokenize(s, special); };
}

std::string BenchModel::text_of(const Tokens& tokens) const {
  std::string out;
  char buf[256];
  for (int32_t t : tokens) {
    size_t len = 0;
    if (wt_token_to_bytes(model, t, buf, sizeof buf, &len) == WT_OK) out.append(buf, len);
  }
  return valid_utf8(out);
}

uint64_t BenchModel::kv_row_bytes() const { return kv_row_bytes("f32"); }

uint64_t BenchModel::kv_row_bytes(const std::string& kv_type) const {
  const uint64_t values = 2ull * static_cast<uint64_t>(info.n_head_kv) * static_cast<uint64_t>(info.head_dim);
  if (kv_type == "f16") return 2 * values;
  if (kv_type == "q8_0") return values / 32 * 34;  // per 32 values an f16 scale and 32 int8
  return 4 * values;
}

Machine probe_machine(int threads) {
  Machine mc;
  mc.threads = threads;
  mc.commit = whittle_bench_commit();
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      const size_t c = line.find(':');
      if (c != std::string::npos) mc.host = line.substr(c + 2);
      break;
    }
  }
  if (mc.host.empty()) mc.host = "unknown cpu";
  mc.device = mc.host;
  mc.bandwidth_gbs = measure_read_bandwidth_gbs(threads, size_t(1) << 30, 5);
  mc.peak = measure_compute_peak(threads);
  return mc;
}

namespace {
std::string& baseline_kv() {
  static std::string name = wt_tools::kv_type_name(wt_context_default_params().kv_type);
  return name;
}
}  // namespace

const std::string& MethodSpec::baseline_kv_type() { return baseline_kv(); }
void MethodSpec::set_baseline_kv_type(const std::string& name) { baseline_kv() = name; }

std::string MethodSpec::label() const {
  std::string s = method;
  for (const auto& [k, v] : params) s += " " + k + "=" + v;
  if (kv_type != baseline_kv_type()) s += " kv=" + kv_type;
  if (matmul != "fast") s += " mm=" + matmul;
  if (batch_rows != 0) s += " batch=" + std::to_string(batch_rows);
  if (memory_budget_mib != 0) s += " budget=" + std::to_string(memory_budget_mib) + "MiB";
  if (cpu_threads != "adaptive") s += " threads=" + cpu_threads;
  return s;
}

Json MethodSpec::params_json() const {
  Json j = Json::object();
  for (const auto& [k, v] : params) j.set(k, v);
  // Always: records written before f16 became the default (2026-12-02) have none and were f32,
  // so a record without it must not match a new one (--resume keys on these params).
  j.set("kv_type", kv_type);
  if (matmul != "fast") j.set("matmul", matmul);
  if (batch_rows != 0) j.set("batch_rows", std::to_string(batch_rows));
  if (memory_budget_mib != 0) j.set("memory_budget_mib", std::to_string(memory_budget_mib));
  // Always, as kv_type: records before 2026-12-07 have none and ran every op on all workers
  // (what "fixed" is now), so --resume must not take them for adaptive ones.
  j.set("cpu_threads", cpu_threads);
  return j;
}

std::vector<MethodSpec> with_variants(const std::vector<MethodSpec>& specs, const Variants& v) {
  if (v.empty()) return specs;
  // Every point of the axes, as full KV at it; the first axis outermost.
  std::vector<MethodSpec> points{MethodSpec{"full", {}}};
  auto axis = [&points](const auto& values, auto set) {
    if (values.empty()) return;
    std::vector<MethodSpec> next;
    for (const MethodSpec& p : points)
      for (const auto& value : values) {
        MethodSpec q = p;
        set(q, value);
        next.push_back(std::move(q));
      }
    points = std::move(next);
  };
  axis(v.kv_types, [](MethodSpec& s, const std::string& t) { s.kv_type = t; });
  axis(v.matmuls, [](MethodSpec& s, const std::string& mm) { s.matmul = mm; });
  axis(v.batch_rows, [](MethodSpec& s, int32_t rows) { s.batch_rows = rows; });
  axis(v.memory_budgets_mib, [](MethodSpec& s, int32_t mib) { s.memory_budget_mib = mib; });
  axis(v.cpu_threads, [](MethodSpec& s, const std::string& mode) { s.cpu_threads = mode; });
  std::vector<MethodSpec> out;
  for (const MethodSpec& point : points) {
    if (!point.is_baseline()) out.push_back(point);
    for (MethodSpec s : specs) {
      if (s.method == "full" && s.params.empty()) continue;  // added above, or the baseline
      s.kv_type = point.kv_type;
      s.matmul = point.matmul;
      s.batch_rows = point.batch_rows;
      s.memory_budget_mib = point.memory_budget_mib;
      s.cpu_threads = point.cpu_threads;
      out.push_back(std::move(s));
    }
  }
  return out;
}

namespace {

bool context_params(const MethodSpec& spec, const ContextOptions& o, wt_context_params* out, std::string* error) {
  wt_context_params& cp = *out;
  cp = wt_context_default_params();
  cp.n_ctx = o.n_ctx;
  cp.n_threads = o.threads;
  cp.progress = abort_on_stop;
  cp.kv_device_blocks = o.kv_device_blocks;
  cp.kv_block_tokens = o.kv_block_tokens;
  cp.kv_sync_swaps = o.kv_sync_swaps;
  cp.kv_pager_flags = o.kv_pager_copy ? WT_KV_PAGER_COPY : 0;
  wt_tools::kv_type_from_name(spec.kv_type, &cp.kv_type);  // a name args.cpp accepted
  cp.matmul_mode = spec.matmul == "f32" ? WT_MATMUL_F32 : WT_MATMUL_FAST;
  cp.n_batch_rows = spec.batch_rows;
  cp.memory_budget_bytes = static_cast<uint64_t>(spec.memory_budget_mib) << 20;
  cp.cpu_flags = spec.cpu_threads == "fixed" ? WT_CPU_FIXED_THREADS : 0;
  auto fail = [&](const std::string& what) {
    *error = spec.label() + ": " + what + ": " + wt_last_error();
    return false;
  };
  if (wt_prune_method_from_name(spec.method.c_str(), &cp.prune.method) != WT_OK) return fail("unknown method");
  for (const auto& [k, v] : spec.params)
    if (wt_prune_set_param(&cp.prune, k.c_str(), v.c_str()) != WT_OK) return fail("parameter " + k);
  if (o.record_ranking && spec.method != "full" && wt_prune_set_param(&cp.prune, "record_ranking", "1") != WT_OK)
    return fail("record_ranking");
  return true;
}

}  // namespace

bool make_context(const BenchModel& m, const MethodSpec& spec, const ContextOptions& o, wt_context** out,
                  std::string* error, wt_status* status) {
  wt_context_params cp;
  if (status) *status = WT_ERR_INVALID_ARGUMENT;
  if (!context_params(spec, o, &cp, error)) return false;
  const wt_status st = wt_context_create(m.model, &cp, out);
  if (status) *status = st;
  if (st != WT_OK) {
    *error = spec.label() + ": creating the context: " + wt_last_error();
    return false;
  }
  return true;
}

uint64_t plan_context_bytes(const BenchModel& m, const MethodSpec& spec, const ContextOptions& o) {
  wt_context_params cp;
  std::string error;
  wt_context_plan_info plan{};
  if (!context_params(spec, o, &cp, &error) || wt_context_plan(m.model, &cp, &plan) != WT_OK) return 0;
  return plan.context_bytes + plan.driver_bytes;
}

// Rooflines come from the host probes, so they describe only a run on the host CPU; a
// device backend gets none (null in JSON, "-" in tables) until devices have probes of their own.
double decode_roofline_tps(const BenchModel& m, const Machine& mc, double kv_bytes) {
  if (mc.device != mc.host) return std::nan("");
  return mc.bandwidth_gbs * 1e9 / (static_cast<double>(m.info.weight_bytes) + kv_bytes);
}

double prefill_roofline_ms(const BenchModel& m, const Machine& mc, int32_t L) {
  if (mc.peak.fp32_gflops <= 0 || mc.device != mc.host) return std::nan("");
  const double l = L;
  // The token embedding is a lookup, and prefill computes logits for one row only.
  const double matmul_params = static_cast<double>(m.info.n_params) - static_cast<double>(m.info.n_vocab) * m.info.n_embd;
  const double mm_flops = 2.0 * matmul_params * l;
  // Causal attention: QK^T and PV over half the L x L square, per query head.
  const double att_flops = 2.0 * m.info.n_layer * m.info.n_head * m.info.head_dim * l * l;
  const double mm_peak = (mc.peak.int8_gops > 0 ? mc.peak.int8_gops : mc.peak.fp32_gflops) * 1e9;
  return (mm_flops / mm_peak + att_flops / (mc.peak.fp32_gflops * 1e9)) * 1000.0;
}

uint64_t kept_kv(const BenchModel& m, wt_context* ctx, bool is_full, int32_t L, std::vector<int32_t>* rows) {
  const int32_t n_layer = m.info.n_layer;
  if (rows) rows->assign(static_cast<size_t>(n_layer), L);
  wt_prune_stats st;
  if (is_full || wt_context_get_prune_stats(ctx, &st) != WT_OK) {
    // Every row of every layer, in the cache's type: what the layers hold now (the prompt's
    // L rows right after the prefill).
    uint64_t bytes = 0;
    for (int32_t l = 0; l < n_layer; ++l) {
      uint64_t device = 0, host = 0;
      if (wt_context_get_kv_residency(ctx, l, &device, &host) != WT_OK)
        return m.kv_row_bytes() * static_cast<uint64_t>(L) * static_cast<uint64_t>(n_layer);
      bytes += device > host ? device : host;
    }
    return bytes;
  }
  uint64_t bytes = 0;
  for (int32_t l = 0; l < st.n_layer; ++l) {
    if (rows) (*rows)[static_cast<size_t>(l)] = st.kv_rows[l];
    bytes += st.kv_bytes[l];
  }
  return bytes;
}

std::string fmt(double v, const char* format) {
  if (!std::isfinite(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

Json base_record(const char* kind, const BenchModel& m, const Machine& mc, const std::string& suite, uint64_t seed) {
  Json r = Json::object();
  r.set("kind", kind);
  r.set("model", m.info.name[0] ? std::string(m.info.name) : m.path);
  r.set("backend", mc.backend);
  if (!m.rope.empty()) r.set("rope_scaling", m.rope);
  r.set("device", mc.device);
  r.set("host", mc.host);
  r.set("commit", mc.commit);
  r.set("whittle_version", wt_version());
  r.set("threads", mc.threads);
  r.set("suite", suite);
  r.set("seed", static_cast<int64_t>(seed));
  return r;
}

uint64_t host_rss_peak_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

void reset_host_rss_peak() {
  // "5" resets the peak RSS (Linux >= 4.0); elsewhere the peak stays process-wide.
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
}

volatile std::sig_atomic_t g_stop = 0;

void install_stop_handler() {
  std::signal(SIGINT, [](int) {
    if (g_stop) std::_Exit(130);  // a second Ctrl-C does not wait
    g_stop = 1;
  });
}

bool abort_on_stop(float, void*) { return g_stop == 0; }

double prefill_units(int32_t L) {
  const double l = L;
  return l + l * l / 8192.0;  // at 2k tokens attention is ~20% of the default model's prefill
}

void Progress::show(const std::string& what) {
  const double f = total_ > 0 ? done_ / total_ : 0;
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  char eta[32] = "--";
  if (done_ > 0) {
    const double left = el * (total_ - done_) / done_;
    std::snprintf(eta, sizeof eta, "%dm%02ds", static_cast<int>(left) / 60, static_cast<int>(left) % 60);
  }
  // On a terminal one line redrawn in place; in a log file a line every 30 s at most.
  const bool tty = isatty(2) != 0;
  if (!tty && el - last_print_ < 30 && done_ > 0) return;
  last_print_ = el;
  std::fprintf(stderr, "%s[%3.0f%%] %s  elapsed %dm%02ds  ETA %s%s", tty ? "\r\033[K" : "", 100 * f, what.c_str(),
               static_cast<int>(el) / 60, static_cast<int>(el) % 60, eta, tty ? "" : "\n");
  std::fflush(stderr);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace bench

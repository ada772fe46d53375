// What every whittle-bench mode shares: the model and its tokenizer, the machine facts each
// record carries, method specs and their contexts, host memory, Ctrl-C, and progress/ETA.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compute_probe.h"
#include "tasks.h"
#include "tools/common/json.h"
#include "whittle.h"

namespace bench {

// The tools' JSON value and its readers and writers (tools/common/json.h).
using wt_tools::Json;
using wt_tools::read_json_file;
using wt_tools::valid_utf8;
using wt_tools::write_csv;
using wt_tools::write_json_document;
using wt_tools::write_jsonl;

struct BenchModel {
  wt_model* model = nullptr;
  wt_model_info info{};
  std::string path;
  std::string rope;  // --rope-scaling as asked ("yarn 4 over 32768"); empty: the file's

  Tokens tokenize(const std::string& text, bool add_special) const;
  Tokenizer tokenizer() const;
  std::string text_of(const Tokens& tokens) const;  // bytes of the tokens, valid UTF-8
  // Bytes of K and V of one token in one layer (the f32 cache).
  uint64_t kv_row_bytes() const;  // K and V of one row in f32, the most any KV type takes
  // K and V of one row in a KV type by its name (f32, f16, q8_0).
  uint64_t kv_row_bytes(const std::string& kv_type) const;
};

struct Machine {
  std::string host;     // CPU model name: the bandwidth and peak probes measure it
  std::string device;   // what runs the model: the host CPU, or the backend's device
  std::string backend = "cpu";
  std::string commit;   // git describe of the build
  double bandwidth_gbs = 0;
  ComputePeak peak;
  int threads = 2;
};
// Throws std::system_error when the machine cannot start `threads` threads.
Machine probe_machine(int threads);

// A method and its parameter settings (one point of the cross product).
struct MethodSpec {
  std::string method;
  std::vector<std::pair<std::string, std::string>> params;
  std::string kv_type = baseline_kv_type();  // the KV cache's element (--kv-type): f32, f16 or q8_0
  std::string matmul = "fast";  // the context's matmul_mode (--matmul): fast or f32
  int32_t batch_rows = 0;         // wt_context_params.n_batch_rows (--batch-rows; 0: the default)
  int32_t memory_budget_mib = 0;  // wt_context_params.memory_budget_bytes in MiB (--memory-budget; 0: none)
  std::string cpu_threads = "adaptive";  // --cpu-threads: adaptive, or fixed (WT_CPU_FIXED_THREADS)
  // "snapkv", "snapkv keep=0.2 window=16", "full kv=f32 mm=f32 batch=4096 budget=600MiB threads=fixed"
  std::string label() const;
  Json params_json() const;  // the params, kv_type, cpu_threads, and the other axes' values that are not the default
  // The reference every run is compared with: full KV in the baseline's KV type, the fast
  // matmul, the default batch rows, no parameters.
  bool is_baseline() const {
    return method == "full" && kv_type == baseline_kv_type() && matmul == "fast" && batch_rows == 0 &&
           memory_budget_mib == 0 && cpu_threads == "adaptive" && params.empty();
  }
  // The baseline's KV type: the first --kv-type listed (main.cpp sets it), else the
  // library's default (wt_context_default_params: f16). Specs take it unless told.
  static const std::string& baseline_kv_type();
  static void set_baseline_kv_type(const std::string& name);
};

// The variant axes (--kv-type, --matmul, --batch-rows, --memory-budget); an empty list: the
// default only.
struct Variants {
  std::vector<std::string> kv_types;
  std::vector<std::string> matmuls;
  std::vector<int32_t> batch_rows;
  std::vector<int32_t> memory_budgets_mib;
  std::vector<std::string> cpu_threads;
  bool empty() const {
    return kv_types.empty() && matmuls.empty() && batch_rows.empty() && memory_budgets_mib.empty() && cpu_threads.empty();
  }
};
// specs x kv types x matmul modes x rows x budgets x CPU threads: each spec once per point, and full KV for each
// point but the baseline's (which the modes add themselves). No lists: specs as they are.
std::vector<MethodSpec> with_variants(const std::vector<MethodSpec>& specs, const Variants& v);

struct ContextOptions {
  int32_t n_ctx = 0;
  int threads = 2;
  bool record_ranking = false;
  int32_t kv_device_blocks = 0;  // the KV pager (0: all KV resident)
  int32_t kv_block_tokens = 64;
  bool kv_sync_swaps = false;
  bool kv_pager_copy = false;    // WT_KV_PAGER_COPY: the copying pager on unified memory too
};
// False with *error on failure; *status (when given) is wt_context_create's status, so a
// caller can tell a context that does not fit (WT_ERR_BUDGET) from a broken one
// (WT_ERR_INVALID_ARGUMENT where the spec's parameters fail before the call).
bool make_context(const BenchModel& m, const MethodSpec& spec, const ContextOptions& o, wt_context** out,
                  std::string* error, wt_status* status = nullptr);
// What make_context(m, spec, o) allocates, and the driver's bound for queued work
// (wt_context_plan's context_bytes + driver_bytes; 0 on an error).
uint64_t plan_context_bytes(const BenchModel& m, const MethodSpec& spec, const ContextOptions& o);

// Rooflines from the machine's probes. Decode: weights plus kv_bytes read once per token,
// at the measured read bandwidth. Prefill of L tokens (full prompt): the matmuls at the
// int8 peak (the fast matmul mode; fp32 where no int8 unit was probed), attention at fp32.
double decode_roofline_tps(const BenchModel& m, const Machine& mc, double kv_bytes);
double prefill_roofline_ms(const BenchModel& m, const Machine& mc, int32_t L);

// The prompt KV a context kept after its last prefill: rows per layer into *rows (when not
// null) and the bytes over all layers. Full KV keeps all L rows (it has no prune stats).
uint64_t kept_kv(const BenchModel& m, wt_context* ctx, bool is_full, int32_t L, std::vector<int32_t>* rows);

// printf-formatted v, or "-" when v is not finite (a figure a run did not produce).
std::string fmt(double v, const char* format);

// The record fields every kind carries.
Json base_record(const char* kind, const BenchModel& m, const Machine& mc, const std::string& suite, uint64_t seed);

// Host memory of this process (Linux /proc; 0 elsewhere).
uint64_t host_rss_peak_bytes();
void reset_host_rss_peak();

// Ctrl-C: the first press asks the run to stop after writing what is done.
extern volatile std::sig_atomic_t g_stop;
void install_stop_handler();
// A progress callback for wt_context_params that aborts a running prefill on Ctrl-C.
bool abort_on_stop(float progress, void* user);

// Progress and ETA on stderr, by planned work units (prefill cost grows faster than L).
class Progress {
 public:
  explicit Progress(double total) : total_(total), t0_(std::chrono::steady_clock::now()) {}
  void show(const std::string& what);
  void advance(double units) { done_ += units; }
  void skip(double units) { total_ -= units; }  // work taken from elsewhere: not in the rate

 private:
  double total_, done_ = 0, last_print_ = -1e9;
  std::chrono::steady_clock::time_point t0_;
};
// Planned cost of one prefill of L tokens, in arbitrary units (matmuls + attention).
double prefill_units(int32_t L);

double ms_since(std::chrono::steady_clock::time_point t0);

}  // namespace bench

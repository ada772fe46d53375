// whittle-bench's command line (args.h).
#include "args.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tasks.h"
#include "tools/common/flags.h"
#include "tools/common/prune_methods.h"
#include "tools/common/rope_flags.h"

namespace bench {

namespace {

const char* const kUsage =
    "usage: whittle-bench -m MODEL [options]\n"
    "  speed:  -p 512,2048 (prompt tokens; 0 = decode only)  -n 16,128 (new tokens)  -r 5  -t 2,4\n"
    "  backend: --backend cpu|vulkan|cuda (where the weights and the run go; default cpu)\n"
    "  rope:   --rope-scaling none|linear|yarn --rope-scale F --yarn-orig-ctx N (replace the file's\n"
    "          scaling, at load: Qwen2.5 and Qwen3 past 32k tokens: yarn 4 over 32768)\n"
    "  suites: --suite quick|full|tiny  (-p overrides the lengths)  --seed 1\n"
    "          --resume FILE.json  (an earlier run's --json: each method's prompts done there are kept, not run)\n"
    "          --summarize  (with --resume: the summary of FILE's runs; nothing new is run)\n"
    "          --task NAME[@D1:D2...],...  (the tasks instead of the suite's, at needle depths in [0, 1],\n"
    "          0.5 when none: passkey, niah_single, niah_multikey, kv_retrieval, variable_tracking; or none)\n"
    "          --fidelity agree,kl|agree|kl|none  (the real-text prompts instead of the suite's)\n"
    "  methods: --method all|full|snapkv,...  --keep 0.1,0.2  --prune-param KEY=V1,V2 (repeatable)\n"
    "  KV:     --kv-type f32,f16,q8_0 (the KV cache's type: every method in each; the\n"
    "          baseline is full KV in the first type listed; default f16)\n"
    "  matmul: --matmul fast,f32 (wt_matmul_mode: every method in each; fast = the CPU's int8\n"
    "          activations, CUDA's tensor cores from 64 prompt tokens; f32 = neither)\n"
    "          --list-methods (the library's methods and parameters)\n"
    "  rows:   --batch-rows 0,512 (wt_context_params.n_batch_rows: every method in each; 0 = the default,\n"
    "          2048; prompt rows at once: full KV's passes, the slices of a pruned prompt's layers;\n"
    "          --ffn-rows, its name until 2026-12-04, is the same)\n"
    "  memory: --memory-budget 0,600 (wt_context_params.memory_budget_bytes in MiB: every method in each;\n"
    "          0 = none but the memory available; with the default rows a context lowers them to fit)\n"
    "  CPU:    --cpu-threads adaptive,fixed (every method in each; adaptive, the default: ops run on fewer\n"
    "          workers while other threads hold the cores; fixed: WT_CPU_FIXED_THREADS, always -t)\n"
    "  pager:  --pager (resident vs the copying pager's async and sync swaps vs the pager in place,\n"
    "          where memory is unified)  --kv-device 0.25 (device pool share of the KV)  --kv-block 64\n"
    "          (-p lengths, -n one count, --method/--prune-param as above)\n"
    "  state:  --state (a saved context restored vs the prompt prefilled again; -p lengths, -r reps,\n"
    "          --method/--keep/--prune-param as above; default full and snapkv keep 0.2)\n"
    "  ASL:    --asl-calibrate (V_l / V_init per layer on 8 task prompts, and the layer each tau would\n"
    "          select at; -p lengths, --keep one value, --seed 11, --prune-param for other ASL fields;\n"
    "          ASL and the fast matmul (the curve comes from the prompt's own f32 rows, whatever the\n"
    "          KV type): the other method options do not apply)\n"
    "  output: --json FILE  --jsonl FILE  --csv FILE  --plot DIR  [--plot-script PATH]\n"
    "  older:  --prune all|M1,M2 [--keep 0.1] (prefill on prose)  --asl-compare\n";

// The comma-separated values of a flag, empty ones dropped ("a,,b" is "a" and "b").
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out = pieces(s, ',');
  std::erase(out, std::string());
  return out;
}

bool parse_ints(const std::string& s, std::vector<int32_t>* out) {
  out->clear();
  for (const std::string& x : split(s)) {
    char* end = nullptr;
    const long v = std::strtol(x.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > (1 << 20)) return false;
    out->push_back(static_cast<int32_t>(v));
  }
  return !out->empty();
}

// A whole number in [lo, hi], all of v (no sign, no exponent, no trailing text).
bool whole_in(const std::string& v, long lo, long hi, int* out) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  const long x = std::strtol(v.c_str(), nullptr, 10);
  if (errno == ERANGE || x < lo || x > hi) return false;
  *out = static_cast<int>(x);
  return true;
}

}  // namespace

int usage_error(const std::string& what) {
  std::fprintf(stderr, "error: %s\n%s", what.c_str(), kUsage);
  return 2;
}

// 0 on success, else the exit code.
int parse(int argc, char** argv, Args* a) {
  for (int i = 0; i < argc; ++i) {  // appended piecewise: GCC 12's -Wrestrict misfires on "" + string
    if (i) a->command += ' ';
    a->command += argv[i];
  }
  wt_tools::Flags f(argc, argv);
  while (f.next()) {
    const std::string k = f.flag();
    if (k == "-h" || k == "--help") {
      std::fputs(kUsage, stdout);
      return -1;
    }
    if (k == "--list-methods") {
      wt_tools::print_prune_methods(stdout);
      return -1;
    }
    if (k == "--asl-compare") {
      a->mode = Args::Mode::asl;
      continue;
    }
    if (k == "--asl-calibrate") {
      a->mode = Args::Mode::asl_calibrate;
      continue;
    }
    if (k == "--pager") {
      a->mode = Args::Mode::pager;
      continue;
    }
    if (k == "--state") {
      a->mode = Args::Mode::state;
      continue;
    }
    if (k == "--summarize") {
      a->summarize = true;
      continue;
    }
    std::string v;  // every other flag takes a value
    if (!f.text(&v)) return std::fputs(kUsage, stderr), 2;
    if (k == "-m") a->model = v;
    else if (k == "-p") {
      if (!parse_ints(v, &a->p)) return usage_error("-p expects a list of token counts, e.g. 512,2048");
      a->p_given = true;
    } else if (k == "-n") {
      if (!parse_ints(v, &a->n)) return usage_error("-n expects a list of token counts, e.g. 16,128");
      a->n_given = true;
    } else if (k == "-t") {
      if (!parse_ints(v, &a->threads) || std::count(a->threads.begin(), a->threads.end(), 0) ||
          *std::max_element(a->threads.begin(), a->threads.end()) > wt_tools::kMaxThreads)
        return usage_error("-t expects a list of thread counts in [1, " + std::to_string(wt_tools::kMaxThreads) +
                           "] (the library's limit), got " + v);
    } else if (k == "-r") {
      if (!whole_in(v, 1, 1 << 20, &a->reps)) return usage_error("-r expects a repetition count in [1, 1048576], got " + v);
    } else if (k == "--seed") {
      // strtoull takes "-1" as 2^64 - 1: only digits are a seed.
      char* end = nullptr;
      errno = 0;
      a->seed = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || *end != '\0' || errno == ERANGE)
        return usage_error("--seed expects a whole number in [0, 2^64 - 1], got " + v);
      a->seed_given = true;
    } else if (k == "--backend") {
      const std::pair<const char*, wt_backend_kind> kinds[] = {
          {"cpu", WT_BACKEND_CPU}, {"vulkan", WT_BACKEND_VULKAN}, {"cuda", WT_BACKEND_CUDA}};
      const auto* it = std::find_if(std::begin(kinds), std::end(kinds), [&](const auto& x) { return v == x.first; });
      if (it == std::end(kinds)) return usage_error("--backend expects cpu, vulkan or cuda");
      a->backend = it->first;
      a->backend_kind = it->second;
    } else if (wt_tools::is_rope_flag(k)) {
      std::string error;
      if (!wt_tools::apply_rope_flag(k, v, &a->load, &error)) return usage_error(error);
    } else if (k == "--suite") {
      a->suite = v;
      a->mode = Args::Mode::suite;
    } else if (k == "--task") {
      std::string error;
      if (!parse_task_list(v, &a->tasks, &error)) return usage_error("--task: " + error);
      a->tasks_given = true;
    } else if (k == "--fidelity") {
      const std::vector<std::string> parts = split(v);
      a->fidelity_given = true;
      a->fidelity_agree = a->fidelity_kl = false;
      for (const std::string& x : parts) {
        if (x == "agree") a->fidelity_agree = true;
        else if (x == "kl") a->fidelity_kl = true;
        else if (!(x == "none" && parts.size() == 1))
          return usage_error("--fidelity expects agree,kl or agree or kl or none, got " + v);
      }
      if (parts.empty()) return usage_error("--fidelity expects agree,kl or agree or kl or none, got " + v);
    } else if (k == "--method") a->methods = split(v);
    else if (k == "--prune") {
      a->mode = Args::Mode::prune;
      a->methods = split(v);
    } else if (k == "--keep") a->keeps = split(v);
    else if (k == "--kv-type") {
      a->variants.kv_types = split(v);
      wt_kv_type type;
      for (const std::string& t : a->variants.kv_types)
        if (!wt_tools::kv_type_from_name(t, &type)) return usage_error("--kv-type expects a list of f32, f16 and q8_0, got " + v);
      if (a->variants.kv_types.empty()) return usage_error("--kv-type expects a list of f32, f16 and q8_0, got " + v);
    } else if (k == "--matmul") {
      a->variants.matmuls = split(v);
      for (const std::string& t : a->variants.matmuls)
        if (t != "fast" && t != "f32") return usage_error("--matmul expects a list of fast and f32, got " + v);
      if (a->variants.matmuls.empty()) return usage_error("--matmul expects a list of fast and f32, got " + v);
    } else if (k == "--batch-rows" || k == "--ffn-rows") {
      a->variants.batch_rows.clear();
      for (const std::string& t : split(v)) {
        int32_t rows = 0;
        if (!whole_in(t, 0, 1 << 20, &rows)) return usage_error("--batch-rows expects a list of rows in [0, 1048576], got " + v);
        a->variants.batch_rows.push_back(rows);
      }
      if (a->variants.batch_rows.empty()) return usage_error("--batch-rows expects a list of rows in [0, 1048576], got " + v);
    } else if (k == "--memory-budget") {
      a->variants.memory_budgets_mib.clear();
      for (const std::string& t : split(v)) {
        int32_t mib = 0;
        if (!whole_in(t, 0, 1 << 24, &mib)) return usage_error("--memory-budget expects a list of MiB in [0, 16777216], got " + v);
        a->variants.memory_budgets_mib.push_back(mib);
      }
      if (a->variants.memory_budgets_mib.empty())
        return usage_error("--memory-budget expects a list of MiB in [0, 16777216], got " + v);
    } else if (k == "--cpu-threads") {
      a->variants.cpu_threads = split(v);
      for (const std::string& t : a->variants.cpu_threads)
        if (t != "adaptive" && t != "fixed") return usage_error("--cpu-threads expects a list of adaptive and fixed, got " + v);
      if (a->variants.cpu_threads.empty()) return usage_error("--cpu-threads expects a list of adaptive and fixed, got " + v);
    }
    else if (k == "--prune-param") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return usage_error("--prune-param expects KEY=VALUE[,VALUE...]");
      a->params.emplace_back(v.substr(0, eq), split(v.substr(eq + 1)));
    } else if (k == "--json") a->json = v;
    else if (k == "--jsonl") a->jsonl = v;
    else if (k == "--csv") a->csv = v;
    else if (k == "--plot") a->plot_dir = v;
    else if (k == "--plot-script") a->plot_script = v;
    else if (k == "--resume") a->resume = v;
    else if (k == "--kv-device") {
      a->kv_device = std::atof(v.c_str());
      if (!(a->kv_device > 0 && a->kv_device <= 1)) return usage_error("--kv-device expects a fraction in (0, 1]");
    } else if (k == "--kv-block") {
      if (!whole_in(v, 1, 1 << 20, &a->kv_block)) return usage_error("--kv-block expects tokens in [1, 1048576], got " + v);
    }
    else return usage_error("unknown argument " + k);
  }
  if (a->model.empty()) return usage_error("-m MODEL is required");
  if (std::string error; !wt_tools::check_rope_flags(a->load, &error)) return usage_error(error);
  // Every method x keep x parameter value is a run: a product past kMaxMethodSpecs is a
  // typo, not a benchmark (and would exhaust memory before the first run).
  double points = a->keeps.empty() ? 1.0 : static_cast<double>(a->keeps.size());
  for (const auto& axis : a->params) points *= static_cast<double>(std::max<size_t>(axis.second.size(), 1));
  const bool all = a->methods.empty() || (a->methods.size() == 1 && a->methods[0] == "all");
  points *= static_cast<double>(all ? wt_tools::prune_method_names(/*without_full=*/true).size() : a->methods.size());
  points *= static_cast<double>(std::max<size_t>(a->variants.kv_types.size(), 1));
  points *= static_cast<double>(std::max<size_t>(a->variants.matmuls.size(), 1));
  points *= static_cast<double>(std::max<size_t>(a->variants.batch_rows.size(), 1));
  points *= static_cast<double>(std::max<size_t>(a->variants.memory_budgets_mib.size(), 1));
  points *= static_cast<double>(std::max<size_t>(a->variants.cpu_threads.size(), 1));
  if (points > kMaxMethodSpecs)
    return usage_error("--method, --keep and --prune-param values make " + std::to_string(static_cast<unsigned long long>(std::min(points, 1e18))) +
                       " runs per prompt, more than " + std::to_string(kMaxMethodSpecs));
  if (!a->resume.empty() && a->mode != Args::Mode::suite) return usage_error("--resume goes with --suite");
  if ((a->tasks_given || a->fidelity_given) && a->mode != Args::Mode::suite)
    return usage_error("--task and --fidelity go with --suite");
  if (a->tasks_given && a->tasks.empty() && a->fidelity_given && !a->fidelity_agree && !a->fidelity_kl)
    return usage_error("--task none and --fidelity none leave the suite no prompt");
  if (a->summarize && a->resume.empty()) return usage_error("--summarize goes with --resume");
  return 0;
}

// Methods x keep values x every --prune-param's values: one MethodSpec per point.
std::vector<MethodSpec> cross_product(const Args& a) {
  std::vector<std::string> methods = a.methods;
  if (methods.empty() || (methods.size() == 1 && methods[0] == "all"))
    methods = wt_tools::prune_method_names(/*without_full=*/true);
  std::vector<std::vector<std::pair<std::string, std::string>>> points = {{}};
  std::vector<std::pair<std::string, std::vector<std::string>>> axes = a.params;
  if (!a.keeps.empty()) axes.insert(axes.begin(), {"keep", a.keeps});
  for (const auto& [key, values] : axes) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& pt : points)
      for (const std::string& v : values) {
        auto q = pt;
        q.emplace_back(key, v);
        next.push_back(q);
      }
    points = next;
  }
  std::vector<MethodSpec> out;
  for (const std::string& m : methods) {
    if (m == "full") continue;  // the baseline is added once, without parameters
    for (const auto& pt : points) out.push_back(MethodSpec{m, pt});
  }
  return out;
}

}  // namespace bench

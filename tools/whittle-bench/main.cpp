// whittle-bench: the on-device benchmark and accuracy harness (../shared/EVALUATION.md).
//   speed (default): whittle-bench -m MODEL [-p 512,2048] [-n 16,128] [-r 5] [-t 2]
//                    [--method all|M1,M2] [--keep 0.1,0.2] [--prune-param KEY=V1,V2]...
//   suites:          whittle-bench -m MODEL --suite quick|full|tiny [-p LENGTHS] [--method ...] [--seed S]
//   outputs:         [--json FILE] [--jsonl FILE] [--csv FILE] [--plot DIR]
//   resume:          --suite ... --resume FILE.json (an interrupted run's --json: its prompts are not run again)
//   pager:           whittle-bench -m MODEL --pager [-p 1024] [-n 32] [--kv-device 0.25] [--method ...]
//   older modes:     --prune all|M1,M2 (prefill on prose vs full, prune_bench.h), --asl-compare
// Lists run as a cross product; pruned figures are also ratios to full KV from the same run.
// Ctrl-C stops after writing what is done.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "bench_common.h"
#include "pager_bench.h"
#include "prune_bench.h"
#include "speed.h"
#include "suite.h"
#include "tools/common/flags.h"
#include "tools/common/prune_methods.h"

#ifndef WHITTLE_BENCH_PLOT_SCRIPT
#define WHITTLE_BENCH_PLOT_SCRIPT "plot.py"
#endif

namespace {

using namespace bench;

const char* const kUsage =
    "usage: whittle-bench -m MODEL [options]\n"
    "  speed:  -p 512,2048 (prompt tokens; 0 = decode only)  -n 16,128 (new tokens)  -r 5  -t 2,4\n"
    "  backend: --backend cpu|vulkan|cuda (where the weights and the run go; default cpu)\n"
    "  suites: --suite quick|full|tiny  (-p overrides the lengths)  --seed 1\n"
    "          --resume FILE.json  (an interrupted run's --json: prompts done there are kept, not run)\n"
    "  methods: --method all|full|snapkv,...  --keep 0.1,0.2  --prune-param KEY=V1,V2 (repeatable)\n"
    "          --list-methods (the library's methods and parameters)\n"
    "  pager:  --pager (resident vs pager async vs sync swaps)  --kv-device 0.25 (device pool share of\n"
    "          the KV)  --kv-block 64  (-p lengths, -n one count, --method/--prune-param as above)\n"
    "  output: --json FILE  --jsonl FILE  --csv FILE  --plot DIR  [--plot-script PATH]\n"
    "  older:  --prune all|M1,M2 [--keep 0.1] (prefill on prose)  --asl-compare\n";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
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

struct Args {
  std::string model, suite, json, jsonl, csv, plot_dir, resume, plot_script = WHITTLE_BENCH_PLOT_SCRIPT;
  std::string backend = "cpu";
  wt_backend_kind backend_kind = WT_BACKEND_CPU;
  std::vector<int32_t> p, n = {16, 128}, threads = {2};
  bool p_given = false, n_given = false;
  int reps = 5;
  uint64_t seed = 1;
  std::vector<std::string> methods, keeps;
  std::vector<std::pair<std::string, std::vector<std::string>>> params;  // key -> values
  double kv_device = 0.25;
  int32_t kv_block = 64;
  enum class Mode { speed, suite, prune, asl, pager } mode = Mode::speed;
  std::string command;
};

int usage_error(const std::string& what) {
  std::fprintf(stderr, "error: %s\n%s", what.c_str(), kUsage);
  return 2;
}

// 0 on success, else the exit code.
int parse(int argc, char** argv, Args* a) {
  for (int i = 0; i < argc; ++i) a->command += (i ? " " : "") + std::string(argv[i]);
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
    if (k == "--pager") {
      a->mode = Args::Mode::pager;
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
      a->reps = std::atoi(v.c_str());
      if (a->reps < 1) return usage_error("-r expects a repetition count >= 1");
    } else if (k == "--seed") {
      // strtoull takes "-1" as 2^64 - 1: only digits are a seed.
      char* end = nullptr;
      errno = 0;
      a->seed = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || *end != '\0' || errno == ERANGE)
        return usage_error("--seed expects a whole number in [0, 2^64 - 1], got " + v);
    } else if (k == "--backend") {
      const std::pair<const char*, wt_backend_kind> kinds[] = {
          {"cpu", WT_BACKEND_CPU}, {"vulkan", WT_BACKEND_VULKAN}, {"cuda", WT_BACKEND_CUDA}};
      const auto* it = std::find_if(std::begin(kinds), std::end(kinds), [&](const auto& x) { return v == x.first; });
      if (it == std::end(kinds)) return usage_error("--backend expects cpu, vulkan or cuda");
      a->backend = it->first;
      a->backend_kind = it->second;
    } else if (k == "--suite") {
      a->suite = v;
      a->mode = Args::Mode::suite;
    } else if (k == "--method") a->methods = split(v);
    else if (k == "--prune") {
      a->mode = Args::Mode::prune;
      a->methods = split(v);
    } else if (k == "--keep") a->keeps = split(v);
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
      a->kv_block = std::atoi(v.c_str());
      if (a->kv_block < 1) return usage_error("--kv-block expects tokens >= 1");
    }
    else return usage_error("unknown argument " + k);
  }
  if (a->model.empty()) return usage_error("-m MODEL is required");
  if (!a->resume.empty() && a->mode != Args::Mode::suite) return usage_error("--resume goes with --suite");
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

bool write_outputs(const Args& a, const BenchModel& m, const Machine& mc, const std::vector<Json>& records,
                   bool complete, const Json& resumed_from) {
  Json meta = base_record("meta", m, mc, a.suite, a.seed);
  meta.set("command", a.command);
  meta.set("complete", complete);
  if (resumed_from.type() != Json::Type::null) meta.set("resumed_from", resumed_from);
  std::string err;
  bool ok = true;
  if (!a.json.empty()) ok &= write_json_document(a.json, meta, records, &err);
  if (!a.jsonl.empty()) ok &= write_jsonl(a.jsonl, records, &err);
  if (!a.csv.empty()) ok &= write_csv(a.csv, records, &err);
  if (!ok) std::fprintf(stderr, "error: %s\n", err.c_str());
  if (ok && !a.plot_dir.empty()) {
    // The plots read JSON lines: the --jsonl file, or a temporary one removed afterwards.
    std::string src = a.jsonl;
    const bool temporary = src.empty();
    if (temporary) {
      src = a.plot_dir + "/.records.jsonl";
      const std::string mk = "mkdir -p '" + a.plot_dir + "'";
      if (std::system(mk.c_str()) != 0 || !write_jsonl(src, records, &err)) {
        std::fprintf(stderr, "error: %s\n", err.empty() ? ("cannot create " + a.plot_dir).c_str() : err.c_str());
        return false;
      }
    }
    const std::string cmd = "python3 '" + a.plot_script + "' '" + src + "' '" + a.plot_dir + "'";
    const int rc = std::system(cmd.c_str());
    if (temporary) std::remove(src.c_str());
    if (rc != 0) {
      std::fprintf(stderr, "error: plotting failed (%s)\n", cmd.c_str());
      return false;
    }
    std::fprintf(stderr, "plots written to %s\n", a.plot_dir.c_str());
  }
  return ok;
}

// The records of an earlier --json of the same suite, model, backend, threads and seed:
// "machine" records into *records, "run" records into *runs; *meta_out = its meta.
bool load_resume(const Args& a, const BenchModel& m, const Machine& mc, std::vector<Json>* records,
                 std::vector<Json>* runs, Json* meta_out, std::string* error) {
  Json doc;
  if (!read_json_file(a.resume, &doc, error)) return false;
  const Json* meta = doc.find("meta");
  const Json* recs = doc.find("records");
  if (!meta || !recs || recs->type() != Json::Type::array) {
    *error = a.resume + ": not a whittle-bench --json document (no meta or records)";
    return false;
  }
  const Json now = base_record("meta", m, mc, a.suite, a.seed);
  for (const char* k : {"model", "backend", "threads", "suite", "seed"}) {
    const Json* was = meta->find(k);
    if (!was || was->dump() != now.find(k)->dump()) {
      *error = a.resume + ": its " + k + " is " + (was ? was->dump() : "missing") + ", this run's is " +
               now.find(k)->dump() + " (resume the same suite, model, backend, threads and seed)";
      return false;
    }
  }
  for (const Json& r : recs->elems()) {
    const Json* kind = r.find("kind");
    if (kind && kind->str() == "machine") records->push_back(r);
    else if (kind && kind->str() == "run") runs->push_back(r);
  }
  Json from = Json::object();
  for (const char* k : {"command", "commit", "complete"})
    if (const Json* v = meta->find(k)) from.set(k, *v);
  *meta_out = from;
  return true;
}

int run_older_mode(const Args& a, wt_model* model) {
  PruneBenchOptions po;
  po.threads = a.threads[0];
  if (a.p_given) po.lengths = a.p;
  else if (a.mode == Args::Mode::asl) po.lengths = {2048};
  if (a.reps != 5) po.reps = a.reps;
  if (!(a.methods.size() == 1 && a.methods[0] == "all")) po.methods = a.methods;
  if (!a.keeps.empty()) po.keep = static_cast<float>(std::atof(a.keeps[0].c_str()));
  po.json_path = a.json;
  for (const auto& [k, vs] : a.params) po.params.emplace_back(k, vs.front());
  return a.mode == Args::Mode::prune ? run_prune_bench(model, po) : run_asl_compare(model, po);
}

}  // namespace

static int run_main(int argc, char** argv) {
  Args a;
  if (const int rc = parse(argc, argv, &a); rc != 0) return rc < 0 ? 0 : rc;
  BenchModel m;
  m.path = a.model;
  wt_model_params mp = wt_model_default_params();
  mp.backend = a.backend_kind;
  if (wt_model_load(a.model.c_str(), &mp, &m.model) != WT_OK) {
    std::fprintf(stderr, "error: loading %s: %s\n", a.model.c_str(), wt_last_error());
    return 1;
  }
  (void)wt_model_get_info(m.model, &m.info);
  if (a.mode == Args::Mode::prune || a.mode == Args::Mode::asl) {
    const int rc = run_older_mode(a, m.model);
    wt_model_free(m.model);
    return rc;
  }
  install_stop_handler();

  std::vector<Machine> machines;
  for (int t : a.threads) {
    try {
      machines.push_back(probe_machine(t));
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "error: -t %d: the machine probe cannot start %d threads here (%s)\n", t, t, e.what());
      wt_model_free(m.model);
      return 1;
    }
    machines.back().backend = a.backend;
    if (m.info.device && m.info.device[0]) machines.back().device = m.info.device;
  }
  std::vector<Json> records;
  for (const Machine& mc : machines) {
    Json r = base_record("machine", m, mc, a.suite, a.seed);
    r.set("bandwidth_gbs", mc.bandwidth_gbs);
    r.set("fp32_gflops", mc.peak.fp32_gflops);
    r.set("int8_gops", mc.peak.int8_gops > 0 ? Json(mc.peak.int8_gops) : Json());
    records.push_back(r);
  }
  std::printf("model: %s (%s, %.1f M params, %.1f MiB of weights)\n", m.info.name, m.info.architecture,
              m.info.n_params / 1e6, m.info.weight_bytes / 1048576.0);
  for (const Machine& mc : machines) {
    if (mc.device != mc.host) std::printf("device: %s (%s backend)\n", mc.device.c_str(), mc.backend.c_str());
    std::printf("host: %s, %d threads: read bandwidth %.1f GB/s, fp32 %.0f GFLOP/s (%s), int8 %.0f GOP/s (%s)\n",
                mc.host.c_str(), mc.threads, mc.bandwidth_gbs, mc.peak.fp32_gflops, mc.peak.fp32_isa,
                mc.peak.int8_gops, mc.peak.int8_gops > 0 ? mc.peak.int8_isa : "not probed");
  }
  std::printf("commit %s\n\n", machines[0].commit.c_str());

  std::string error;
  bool ok = true, complete = true;
  Json resumed_from;
  if (a.mode == Args::Mode::suite) {
    std::vector<Json> earlier_runs;
    if (!a.resume.empty()) {
      std::vector<Json> earlier_machines;
      if (!load_resume(a, m, machines[0], &earlier_machines, &earlier_runs, &resumed_from, &error)) {
        std::fprintf(stderr, "error: %s\n", error.c_str());
        wt_model_free(m.model);
        return 1;
      }
      records.insert(records.begin(), earlier_machines.begin(), earlier_machines.end());
      std::printf("resuming from %s: %zu runs done there\n\n", a.resume.c_str(), earlier_runs.size());
    }
    SuiteOptions so;
    if (!suite_preset(a.suite, m.info.n_ctx_train, &so, &error)) {
      wt_model_free(m.model);
      return usage_error(error);
    }
    so.seed = a.seed;
    so.resume = std::move(earlier_runs);
    if (a.p_given) so.lengths = a.p;
    if (!a.methods.empty() || !a.keeps.empty() || !a.params.empty()) so.methods = cross_product(a);
    SuiteOutput out;
    ok = run_suite(m, machines[0], so, &out, &error);
    records.insert(records.end(), out.records.begin(), out.records.end());
    complete = ok && out.complete;
  } else if (a.mode == Args::Mode::pager) {
    PagerOptions po;
    if (a.p_given) po.prompt_lengths = a.p;
    if (a.n_given) po.n_gen = a.n.front();
    po.threads = a.threads.front();
    po.reps = a.reps == 5 ? 3 : a.reps;
    po.seed = a.seed;
    po.device_fraction = a.kv_device;
    po.block_tokens = a.kv_block;
    if (!a.methods.empty()) po.methods = cross_product(a);
    SpeedOutput out;
    ok = run_pager(m, machines[0], po, &out, &error);
    records.insert(records.end(), out.records.begin(), out.records.end());
    complete = ok && !g_stop;
  } else {
    SpeedOptions so;
    if (a.p_given) so.prompt_lengths = a.p;
    so.n_gen = a.n;
    so.threads.assign(a.threads.begin(), a.threads.end());
    so.reps = a.reps;
    so.seed = a.seed;
    so.methods = a.methods.empty() ? std::vector<MethodSpec>{} : cross_product(a);
    SpeedOutput out;
    ok = run_speed(m, machines, so, &out, &error);
    records.insert(records.end(), out.records.begin(), out.records.end());
    complete = ok && !g_stop;
  }
  if (!ok) std::fprintf(stderr, "error: %s\n", error.c_str());
  if (g_stop) std::fprintf(stderr, "stopped: writing the %zu records done\n", records.size());
  const bool written = write_outputs(a, m, machines[0], records, complete, resumed_from);
  wt_model_free(m.model);
  if (g_stop) return 130;
  return ok && written ? 0 : 1;
}

// Nothing thrown leaves the program: what escapes the run is an error line and exit 1.
int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "error: an unknown exception\n");
  }
  return 1;
}

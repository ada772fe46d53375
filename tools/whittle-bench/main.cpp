// whittle-bench: the on-device benchmark and accuracy harness (../shared/EVALUATION.md).
//   speed (default): whittle-bench -m MODEL [-p 512,2048] [-n 16,128] [-r 5] [-t 2]
//                    [--method all|M1,M2] [--keep 0.1,0.2] [--prune-param KEY=V1,V2]...
//   suites:          whittle-bench -m MODEL --suite quick|full|tiny [-p LENGTHS] [--method ...] [--seed S]
//                    [--task NAME@D1:D2,...] [--fidelity agree,kl|none]
//   outputs:         [--json FILE] [--jsonl FILE] [--csv FILE] [--plot DIR]
//   resume:          --suite ... --resume FILE.json [--summarize] (an interrupted run's --json: its prompts
//                    are not run again; --summarize runs nothing new)
//   pager:           whittle-bench -m MODEL --pager [-p 1024] [-n 32] [--kv-device 0.25] [--method ...]
//   state:           whittle-bench -m MODEL --state [-p 2048,8192] [--method ...]
//   ASL's tau:       whittle-bench -m MODEL --asl-calibrate [-p 4096,8192] [--keep 0.2] [--seed 11]
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

#include "args.h"
#include "asl_calibrate.h"
#include "bench_common.h"
#include "pager_bench.h"
#include "state_bench.h"
#include "prune_bench.h"
#include "speed.h"
#include "resume.h"
#include "suite.h"
#include "tools/common/flags.h"
#include "tools/common/prune_methods.h"

namespace {

using namespace bench;

// The records of the --resume file: resume_records on its document.
bool load_resume(const Args& a, const BenchModel& m, const Machine& mc, std::vector<Json>* machines,
                 std::vector<Json>* runs, Json* from, std::string* error) {
  Json doc;
  if (!read_json_file(a.resume, &doc, error)) return false;
  return resume_records(doc, a.resume, base_record("meta", m, mc, a.suite, a.seed), machines, runs, from, error);
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
  // Full KV in the first --kv-type listed is the baseline (--kv-type f32,f16: ratios to f32).
  if (!a.variants.kv_types.empty()) MethodSpec::set_baseline_kv_type(a.variants.kv_types[0]);
  // The calibration's own default seed (not the suite's), in every record it writes.
  if (a.mode == Args::Mode::asl_calibrate && !a.seed_given) a.seed = AslCalibrateOptions{}.seed;
  BenchModel m;
  m.path = a.model;
  wt_model_params mp = a.load;
  mp.backend = a.backend_kind;
  if (wt_model_load(a.model.c_str(), &mp, &m.model) != WT_OK) {
    std::fprintf(stderr, "error: loading %s: %s\n", a.model.c_str(), wt_last_error());
    return 1;
  }
  (void)wt_model_get_info(m.model, &m.info);
  if (mp.rope_scaling != WT_ROPE_SCALING_FILE) {
    const char* kind = mp.rope_scaling == WT_ROPE_SCALING_NONE ? "none" : mp.rope_scaling == WT_ROPE_SCALING_LINEAR ? "linear" : "yarn";
    m.rope = kind;
    if (mp.rope_scaling != WT_ROPE_SCALING_NONE) m.rope += " " + fmt(mp.rope_scaling_factor, "%g");
    if (mp.rope_scaling == WT_ROPE_SCALING_YARN)
      m.rope += " over " + (mp.rope_orig_ctx > 0 ? std::to_string(mp.rope_orig_ctx) : std::string("the file's context"));
    std::printf("rope scaling: %s (the model's context: %d)\n", m.rope.c_str(), m.info.n_ctx_train);
  }
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
    so.run_missing = !a.summarize;
    if (a.p_given) so.lengths = a.p;
    if (a.tasks_given) so.tasks = a.tasks;
    if (a.fidelity_given) {
      so.fidelity_agree = a.fidelity_agree;
      so.fidelity_kl = a.fidelity_kl;
    }
    if (!a.methods.empty() || !a.keeps.empty() || !a.params.empty()) so.methods = cross_product(a);
    so.methods = with_variants(so.methods, a.variants);
    SuiteOutput out;
    ok = run_suite(m, machines[0], so, &out, &error);
    records.insert(records.end(), out.records.begin(), out.records.end());
    complete = ok && out.complete;
  } else if (a.mode == Args::Mode::asl_calibrate) {
    AslCalibrateOptions co;
    if (a.p_given) co.prompt_lengths = a.p;
    co.threads = a.threads.front();
    co.seed = a.seed;
    if (!a.keeps.empty()) co.keep = a.keeps.front();
    for (const auto& [k, vs] : a.params) co.params.emplace_back(k, vs.front());
    ok = run_asl_calibrate(m, machines[0], co, &records, &error);
    complete = ok && !g_stop;
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
    po.methods = with_variants(po.methods, a.variants);
    SpeedOutput out;
    ok = run_pager(m, machines[0], po, &out, &error);
    records.insert(records.end(), out.records.begin(), out.records.end());
    complete = ok && !g_stop;
  } else if (a.mode == Args::Mode::state) {
    StateOptions so;
    if (a.p_given) so.prompt_lengths = a.p;
    so.threads = a.threads.front();
    so.reps = a.reps == 5 ? 3 : a.reps;
    so.seed = a.seed;
    if (!a.methods.empty() || !a.keeps.empty() || !a.params.empty()) so.methods = cross_product(a);
    so.methods = with_variants(so.methods, a.variants);
    SpeedOutput out;
    ok = run_state(m, machines[0], so, &out, &error);
    records.insert(records.end(), out.records.begin(), out.records.end());
    complete = ok && !g_stop;
  } else {
    SpeedOptions so;
    if (a.p_given) so.prompt_lengths = a.p;
    so.n_gen = a.n;
    so.threads.assign(a.threads.begin(), a.threads.end());
    so.reps = a.reps;
    so.seed = a.seed;
    so.methods = with_variants(a.methods.empty() ? std::vector<MethodSpec>{} : cross_product(a), a.variants);
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

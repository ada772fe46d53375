// Seeds of the tool harnesses: command lines as the tests and READMEs write them
// (fuzz_tool_args), and --resume documents of a real run of the fuzzed suite (fuzz_resume).
#include <cstdio>
#include <string>
#include <vector>

#include "bench_setup.h"
#include "corpus.h"

namespace wt::fuzz {

namespace {

std::vector<uint8_t> command_line(uint8_t tool, const std::vector<std::string>& args) {
  std::vector<uint8_t> out = {tool};
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) out.push_back(0);
    out.insert(out.end(), args[i].begin(), args[i].end());
  }
  return out;
}

std::vector<uint8_t> bytes_of(const bench::Json& doc) {
  const std::string text = doc.dump();
  return std::vector<uint8_t>(text.begin(), text.end());
}

bench::Json document(const bench::Json& meta, const std::vector<bench::Json>& records) {
  bench::Json doc = bench::Json::object();
  doc.set("meta", meta);
  bench::Json recs = bench::Json::array();
  for (const bench::Json& r : records) recs.push(r);
  doc.set("records", std::move(recs));
  return doc;
}

// r with `key` set to v.
bench::Json with(bench::Json r, const std::string& key, bench::Json v) {
  r.set(key, std::move(v));
  return r;
}

}  // namespace

Seeds tool_args_seeds() {
  Seeds s;
  // 0: whittle-run
  s["run_basic"] = command_line(0, {"-m", "model.gguf", "-p", "Hello", "-n", "16"});
  s["run_file_prune"] = command_line(0, {"-m", "m.gguf", "-f", "p", "--prune", "snapkv", "--prune-param", "keep=0.2",
                                         "--prune-param", "window=16", "-v", "--backend", "cuda"});
  s["run_chat"] = command_line(0, {"-m", "m.gguf", "-p", "Hi", "--chat", "--system", "be brief", "--temp", "0.7",
                                   "--top-k", "40", "--top-p", "0.9", "--seed", "42", "-t", "2", "-c", "4096"});
  s["run_help"] = command_line(0, {"--help"});
  s["run_rope"] = command_line(0, {"-m", "m.gguf", "-p", "x", "--rope-scaling", "yarn", "--rope-scale", "4",
                                   "--yarn-orig-ctx", "32768"});
  s["run_bad"] = command_line(0, {"-m", "m", "-p", "x", "-c", "nan", "-t", "100000", "--seed", "-1", "-n", "1e20"});
  // 1: whittle-bench
  s["bench_speed"] = command_line(1, {"-m", "m.gguf", "-p", "512,2048", "-n", "16,128", "-r", "5", "-t", "2,4"});
  s["bench_suite"] = command_line(1, {"-m", "m.gguf", "--suite", "tiny", "-t", "1", "--resume", "r.json", "--summarize",
                                      "--json", "o.json", "--jsonl", "o.jsonl", "--csv", "o.csv"});
  s["bench_cross"] = command_line(1, {"-m", "m.gguf", "--method", "snapkv,fastkv", "--keep", "0.1,0.2",
                                      "--prune-param", "window=8,16", "--prune-param", "pool_kernel=7,31", "--seed", "3"});
  s["bench_pager"] = command_line(1, {"-m", "m.gguf", "--pager", "-p", "2048", "-n", "32", "--kv-device", "0.25",
                                      "--kv-block", "64", "--backend", "vulkan"});
  s["bench_rope"] = command_line(1, {"-m", "m.gguf", "--rope-scaling", "linear", "--rope-scale", "2.5", "-p", "512"});
  s["bench_bad"] = command_line(1, {"-m", "m", "-t", "100000", "-r", "99999999999", "--seed", "-1", "--kv-block", "0"});
  // 2: whittle-plan
  s["plan_basic"] = command_line(2, {"--board", "agx-orin-32gb", "--model", "m.gguf", "--ctx", "8192", "--new", "256",
                                     "--method", "snapkv", "--keep", "0.2", "--json", "p.json"});
  s["plan_pager"] = command_line(2, {"--board", "detect", "--board-file", "b.json", "-m", "m.json", "-c", "32768",
                                     "--kv-device-blocks", "4", "--kv-block", "64", "--backend", "cuda", "-t", "4",
                                     "--logits-all", "--beyond-train-ctx", "--prune-param", "layer=12"});
  s["plan_rope"] = command_line(2, {"--board", "orin-nano-8gb", "-m", "m.json", "-c", "131072", "--rope-scaling", "yarn",
                                    "--rope-scale", "4", "--yarn-orig-ctx", "32768"});
  s["plan_list"] = command_line(2, {"--list-boards", "--board-file", "b.json"});
  return s;
}

Seeds resume_seeds() {
  Seeds s;
  const BenchSetup& b = bench_setup();
  bench::SuiteOutput out;
  std::string error;
  if (!bench::run_suite(b.model, b.machine, b.suite, &out, &error)) {
    std::fprintf(stderr, "make_corpus: the fuzzed suite failed: %s\n", error.c_str());
    return s;
  }
  std::vector<bench::Json> runs;
  for (const bench::Json& r : out.records)
    if (const bench::Json* k = r.find("kind"); k && k->str() == "run") runs.push_back(r);
  s["suite_done"] = bytes_of(document(b.meta, out.records));
  const size_t per_prompt = b.suite.methods.size() + 1;  // full is added
  if (runs.size() >= per_prompt) {
    const std::vector<bench::Json> first(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(per_prompt));
    s["first_prompt"] = bytes_of(document(b.meta, first));
    std::vector<bench::Json> bad = first;
    bad[1] = with(bad[1], "kept_rows", bench::Json::array_of(std::vector<int>{3}));
    s["short_kept_rows"] = bytes_of(document(b.meta, bad));
    bad = first;
    bad[2] = with(bad[2], "n_decode", bench::Json(1e12));
    s["huge_n_decode"] = bytes_of(document(b.meta, bad));
  }
  s["meta_only"] = bytes_of(document(b.meta, {}));
  s["other_seed"] = bytes_of(document(with(b.meta, "seed", bench::Json(7)), runs));
  return s;
}

}  // namespace wt::fuzz

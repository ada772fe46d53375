// The tools' command lines on any bytes: whittle-run's, whittle-bench's and whittle-plan's
// readers (tools/*/args.h), the code each tool's main runs first. Input: a byte choosing the
// tool, then the arguments separated by NUL bytes. Each reader must end with a verdict (run,
// help, or an error it printed), and a command line it accepts must hold only values in the
// ranges its --help states. whittle-run's -f reads a file: its value is mapped to one of a
// few files made here (text, empty, a directory, missing), never a path from the input
// (/dev/stdin would block, a FIFO hang).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "args.h"  // tools/whittle-bench
#include "fuzz_support.h"
#include "support/gguf_writer.h"
#include "tools/common/flags.h"
#include "tools/whittle-plan/args.h"
#include "tools/whittle-run/args.h"

namespace {

using wt::fuzz::fail;

constexpr size_t kMaxArgs = 64;

std::vector<std::string> prompt_files() {
  namespace fs = std::filesystem;
  static const wt::test::TempPath folder("fuzz_tool_args_files");  // removed at exit
  const fs::path dir = folder.path();
  fs::create_directories(dir);
  std::ofstream(dir / "prompt.txt") << "The capital of France is";
  std::ofstream(dir / "empty.txt").flush();
  return {(dir / "prompt.txt").string(), (dir / "empty.txt").string(), dir.string(), (dir / "missing.txt").string()};
}

void check_run(std::vector<char*>& argv, const std::vector<std::string>& files, std::vector<std::string>& args) {
  for (size_t i = 1; i + 1 < args.size(); ++i)
    if (args[i] == "-f" || args[i] == "--file" || args[i] == "--messages") {
      const unsigned char pick = args[i + 1].empty() ? 0 : static_cast<unsigned char>(args[i + 1][0]);
      args[i + 1] = files[pick % files.size()];
      argv[i + 1] = args[i + 1].data();
    }
  wt_run::Options o;
  wt_run::Action action = wt_run::Action::run;
  if (!wt_run::parse_args(static_cast<int>(argv.size()), argv.data(), &o, &action) || action != wt_run::Action::run)
    return;
  if (o.model.empty() || (o.prompt.empty() && !o.interactive))
    fail("whittle-run accepted no model, or an empty prompt without -i");
  if (o.interactive && !o.prompt_cache.empty()) fail("whittle-run accepted --prompt-cache with -i");
  if (o.messages && (o.chat || o.interactive || !o.system.empty()))
    fail("whittle-run accepted --messages with --chat, -i or --system");
  if (o.n_predict < 0 || o.n_predict > (1 << 20) || o.n_ctx < 0 || o.n_ctx > (1 << 20))
    fail("whittle-run accepted -n %d / -c %d", o.n_predict, o.n_ctx);
  if (o.n_threads < 0 || o.n_threads > wt_tools::kMaxThreads) fail("whittle-run accepted -t %d", o.n_threads);
  if (!std::isfinite(o.temp) || !(o.top_p > 0 && o.top_p <= 1) || o.top_k < 0)
    fail("whittle-run accepted --temp %g --top-p %g --top-k %d", o.temp, o.top_p, o.top_k);
}

void check_bench(std::vector<char*>& argv) {
  bench::Args a;
  if (bench::parse(static_cast<int>(argv.size()), argv.data(), &a) != 0) return;
  if (a.model.empty()) fail("whittle-bench accepted no model");
  for (int32_t t : a.threads)
    if (t < 1 || t > wt_tools::kMaxThreads) fail("whittle-bench accepted -t %d", t);
  if (a.reps < 1 || a.kv_block < 1 || !(a.kv_device > 0 && a.kv_device <= 1))
    fail("whittle-bench accepted -r %d --kv-block %d --kv-device %g", a.reps, a.kv_block, a.kv_device);
  if (a.summarize && a.resume.empty()) fail("whittle-bench accepted --summarize without --resume");
  const size_t n = bench::cross_product(a).size();
  if (static_cast<double>(n) > bench::kMaxMethodSpecs) fail("whittle-bench made %zu method specs", n);
}

void check_plan(std::vector<char*>& argv) {
  wt_plan::Options o;
  bool help = false;
  if (!wt_plan::parse_args(static_cast<int>(argv.size()), argv.data(), &o, &help) || help || o.list) return;
  if (o.board.empty() || o.model.empty()) fail("whittle-plan accepted no board or model");
  if (o.n_ctx < 1 || o.n_ctx > (1 << 20) || o.n_new < 0 || o.n_new >= o.n_ctx)
    fail("whittle-plan accepted --ctx %d --new %d", o.n_ctx, o.n_new);
  if (o.n_threads < 0 || o.n_threads > wt_tools::kMaxThreads || o.kv_block_tokens < 1)
    fail("whittle-plan accepted -t %d --kv-block %d", o.n_threads, o.kv_block_tokens);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::string> files = [] {
    wt::fuzz::quiet_logs();
    wt::fuzz::silence_stdio();
    return prompt_files();
  }();
  if (size == 0) return 0;
  const int tool = data[0] % 3;
  std::vector<std::string> args = {tool == 0 ? "whittle-run" : tool == 1 ? "whittle-bench" : "whittle-plan"};
  std::string cur;
  for (size_t i = 1; i < size && args.size() < kMaxArgs; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  if (!cur.empty() && args.size() < kMaxArgs) args.push_back(cur);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  if (tool == 0) check_run(argv, files, args);
  else if (tool == 1) check_bench(argv);
  else check_plan(argv);
  return 0;
}

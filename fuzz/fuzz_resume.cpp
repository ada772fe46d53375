// whittle-bench --resume on any bytes: the document's check (tools/whittle-bench/resume.h),
// then the suite replaying its run records without running a prompt (--summarize), on the
// setup of bench_setup.h. A document is another program's text: whatever it holds, the
// replay ends with true, or false and an error that names what is wrong; never a crash, an
// allocation sized by a field, or a summary that is not valid JSON.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_setup.h"
#include "fuzz_support.h"
#include "resume.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wt::fuzz;
  // WHITTLE_FUZZ_VERBOSE=1: say how far each input got (to see what the seeds reach).
  static FILE* const verbose = std::getenv("WHITTLE_FUZZ_VERBOSE") ? stderr : nullptr;
  static const bool ready = [] {
    quiet_logs();
    silence_stdio();
    (void)bench_setup();
    return true;
  }();
  (void)ready;
  const BenchSetup& s = bench_setup();
  auto say = [&](const char* stage, const std::string& detail) {
    if (verbose) std::fprintf(verbose, "fuzz_resume: %s %s\n", stage, detail.c_str());
  };

  bench::Json doc;
  std::string error;
  if (!wt_tools::parse_json(std::string(reinterpret_cast<const char*>(data), size), &doc, &error)) {
    if (error.empty()) fail("parse_json: false with no error");
    say("not JSON:", error);
    return 0;
  }
  std::vector<bench::Json> machines, runs;
  bench::Json from;
  if (!bench::resume_records(doc, "fuzz.json", s.meta, &machines, &runs, &from, &error)) {
    if (error.empty()) fail("resume_records: false with no error");
    say("refused document:", error);
    return 0;
  }
  bench::SuiteOptions o = s.suite;
  o.resume = std::move(runs);
  o.run_missing = false;
  bench::SuiteOutput out;
  error.clear();
  if (!bench::run_suite(s.model, s.machine, o, &out, &error)) {
    if (error.empty()) fail("run_suite: false with no error");
    say("refused records:", error);
    return 0;
  }
  say("replayed:", std::to_string(o.resume.size()) + " runs, " + std::to_string(out.records.size()) + " records out");
  // What would be written: every record as JSON that reads back, in valid UTF-8.
  for (const bench::Json& r : out.records) {
    const std::string text = r.dump();
    bench::Json back;
    if (!is_valid_utf8(text)) fail("a summary record is not valid UTF-8: %.200s", text.c_str());
    if (!wt_tools::parse_json(text, &back, &error)) fail("a summary record does not parse back (%s): %.200s", error.c_str(), text.c_str());
  }
  if (!is_valid_utf8(out.markdown)) fail("the summary's markdown is not valid UTF-8");
  return 0;
}

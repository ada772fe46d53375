// The fuzzed suite (bench_setup.h).
#include "bench_setup.h"

#include <string>

#include "fuzz_support.h"

namespace wt::fuzz {

namespace {

BenchSetup make() {
  BenchSetup s;
  test::TinyModelOptions mo;  // as tests/tools/make_tiny_model.cpp
  mo.n_layer = 8;
  mo.n_ctx_train = 4096;
  mo.seed = 4;
  s.model.model = load_model_bytes(test::make_tiny_llama(mo).build(), "bench_tiny");
  s.model.path = "tiny.gguf";
  if (wt_model_get_info(s.model.model, &s.model.info) != WT_OK) fail("model info: %s", wt_last_error());
  s.machine.host = s.machine.device = "fuzz";
  s.machine.commit = "fuzz";
  s.machine.threads = 1;
  std::string error;
  if (!bench::suite_preset("tiny", s.model.info.n_ctx_train, &s.suite, &error)) fail("%s", error.c_str());
  // One length and two methods: each input replays a few prompts, not hundreds.
  s.suite.lengths = {640};
  s.suite.methods = {bench::MethodSpec{"snapkv", {{"keep", "0.3"}}}, bench::MethodSpec{"sliminfer", {{"keep", "0.3"}}}};
  s.meta = bench::base_record("meta", s.model, s.machine, s.suite.name, s.suite.seed);
  return s;
}

}  // namespace

const BenchSetup& bench_setup() {
  static const BenchSetup s = make();  // the model lives as long as the process
  return s;
}

}  // namespace wt::fuzz

// Arbitrary bytes as a GGUF model: the reader (GgufFile::parse_memory), every typed getter on
// every key and tensor, then what wt_model_load does after opening a file (hparams, vocabulary,
// tensor shapes and types, tokenizer, chat template; wt::api::make_model), all from memory.
// A model that loads is then used through the C API: info, tokenize, detokenize, chat, and a
// context with one prefill and decode when the model is small enough to run in a moment.
// Statuses are checked against what each call documents; the sanitizers judge the rest.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "runtime/api/handles.h"
#include "runtime/model/gguf.h"

using wt::fuzz::expect_status;
using wt::fuzz::fail;

namespace {

// A model file that loads and is this small runs a context: its forward pass meets the
// shapes the loader accepted (a corpus input is a few KB to a few hundred).
constexpr uint64_t kMaxRunWeightBytes = 1 << 20;
constexpr uint64_t kMaxRunContextBytes = 32ull << 20;

// Bytes read from the views the reader hands out land here, so the reads are not optimised
// away and ASan sees every one.
volatile size_t g_sink = 0;

void check_getters(const wt::GgufFile& f) {
  for (const wt::GgufKv& kv : f.kvs()) {
    const std::string_view k = kv.key;
    uint32_t u32 = 0;
    int32_t i32 = 0;
    uint64_t u64 = 0;
    int64_t i64 = 0;
    float f32 = 0;
    bool b = false;
    std::string_view s;
    std::vector<std::string_view> strings;
    // A getter on a present key succeeds or is WT_ERR_FORMAT (wrong type, value out of range).
    for (const wt::Status& st :
         {f.get_u32(k, &u32, true), f.get_i32(k, &i32, true), f.get_u64(k, &u64, true), f.get_i64(k, &i64, true),
          f.get_f32(k, &f32, true), f.get_bool(k, &b, true), f.get_string(k, &s, true),
          f.get_string_array(k, &strings, true)}) {
      expect_status(st.code(), {WT_OK, WT_ERR_FORMAT}, "GgufFile getter");
    }
    // Touch every byte the views hand out: ASan flags any that lie outside the input.
    for (const char ch : s) g_sink = g_sink + static_cast<uint8_t>(ch);
    for (const std::string_view e : strings)
      for (const char ch : e) g_sink = g_sink + static_cast<uint8_t>(ch);
    wt::GgufArrayView<double> f64s;
    if (f.get_array(k, &f64s, true).is_ok() && !f64s.empty()) g_sink = g_sink + (f64s[f64s.size() - 1] > 0);
    wt::GgufArrayView<uint8_t> u8s;
    if (f.get_array(k, &u8s, true).is_ok() && !u8s.empty()) g_sink = g_sink + u8s[u8s.size() - 1];
  }
  for (const wt::GgufTensorInfo& t : f.tensors()) {
    wt::Tensor view;
    size_t bytes = 0;
    const wt::Status st = f.get_tensor(t.name, &view, &bytes);
    expect_status(st.code(), {WT_OK, WT_ERR_UNSUPPORTED}, "GgufFile::get_tensor");
    if (st.is_ok() && bytes > 0) {
      // The first and last byte of the data lie inside the input (parse checked the range).
      const auto* p = static_cast<const uint8_t*>(view.data);
      g_sink = g_sink + p[0] + p[bytes - 1];
    }
  }
}

void use_model(const wt_model* model) {
  wt_model_info info;
  expect_status(wt_model_get_info(model, &info), {WT_OK}, "wt_model_get_info");

  // Tokenize text with special tokens of both templates, then turn every token back.
  const char text[] = "<|im_start|>user\nHello the world <|eot_id|>";
  for (const bool parse_special : {false, true}) {
    wt_tokenize_params tp = wt_tokenize_default_params();
    tp.parse_special = parse_special;
    std::vector<wt_token> ids(64);
    size_t n = 0;
    const wt_status st = wt_tokenize(model, text, sizeof text - 1, &tp, ids.data(), ids.size(), &n);
    expect_status(st, {WT_OK, WT_ERR_BUFFER_TOO_SMALL}, "wt_tokenize");
    if (st != WT_OK) continue;
    wt_detokenizer* detok = nullptr;
    expect_status(wt_detokenizer_create(model, &detok), {WT_OK}, "wt_detokenizer_create");
    char buf[256];
    for (size_t i = 0; i < n; ++i) {
      if (ids[i] < 0 || ids[i] >= info.n_vocab) fail("wt_tokenize gave token %d outside [0, %d)", ids[i], info.n_vocab);
      size_t len = 0;
      expect_status(wt_detokenizer_push(detok, ids[i], buf, sizeof buf, &len), {WT_OK, WT_ERR_BUFFER_TOO_SMALL},
                    "wt_detokenizer_push");
    }
    size_t len = 0;
    expect_status(wt_detokenizer_flush(detok, buf, sizeof buf, &len), {WT_OK}, "wt_detokenizer_flush");
    wt_detokenizer_free(detok);
  }

  const wt_chat_message msgs[] = {{"system", "Be brief."}, {"user", "Hi"}};
  char chat[512];
  size_t chat_len = 0;
  expect_status(wt_chat_apply(model, msgs, 2, true, chat, sizeof chat, &chat_len), {WT_OK, WT_ERR_UNSUPPORTED, WT_ERR_BUFFER_TOO_SMALL}, "wt_chat_apply");

  // A short context: the planner first, then the real thing when it is small.
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 16;
  cp.n_threads = 1;
  wt_context_plan_info plan;
  const wt_status planned = wt_context_plan(model, &cp, &plan);
  expect_status(planned, {WT_OK, WT_ERR_UNSUPPORTED}, "wt_context_plan");
  if (planned != WT_OK || info.weight_bytes > kMaxRunWeightBytes || plan.context_bytes > kMaxRunContextBytes) return;
  wt_context* ctx = nullptr;
  expect_status(wt_context_create(model, &cp, &ctx), {WT_OK}, "wt_context_create after a plan that fit");
  const wt_token prompt[3] = {0, info.n_vocab / 2, info.n_vocab - 1};
  expect_status(wt_context_prefill(ctx, prompt, 3), {WT_OK}, "wt_context_prefill");
  expect_status(wt_context_decode(ctx, info.n_vocab - 1), {WT_OK}, "wt_context_decode");
  wt_sampler* sampler = nullptr;
  expect_status(wt_sampler_create(model, nullptr, &sampler), {WT_OK}, "wt_sampler_create");
  wt_token next = -1;
  expect_status(wt_sampler_sample(sampler, ctx, &next), {WT_OK}, "wt_sampler_sample");
  if (next < 0 || next >= info.n_vocab) fail("wt_sampler_sample gave token %d outside [0, %d)", next, info.n_vocab);
  wt_sampler_free(sampler);
  wt_context_free(ctx);
}

// WHITTLE_FUZZ_VERBOSE=1: print each input's parse and load status (to see what seeds reach).
bool g_verbose = false;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wt::fuzz::quiet_logs();
  const char* v = std::getenv("WHITTLE_FUZZ_VERBOSE");
  g_verbose = v && *v && *v != '0';
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // libFuzzer hands each input in a heap block of exactly `size` bytes: ASan flags a read
  // one byte past the end of the "file".
  std::shared_ptr<wt::GgufFile> file;
  const wt::Status parsed = wt::GgufFile::parse_memory(data, size, &file);
  expect_status(parsed.code(), {WT_OK, WT_ERR_FORMAT, WT_ERR_UNSUPPORTED}, "GgufFile::parse_memory");
  if (g_verbose) std::fprintf(stderr, "parse: %s %s\n", wt_status_string(parsed.code()), parsed.message().c_str());
  if (!parsed.is_ok()) {
    if (parsed.message().empty()) fail("parse_memory failed without a message");
    return 0;
  }
  check_getters(*file);

  std::unique_ptr<wt_model> model;
  const wt::Status loaded = wt::api::make_model(file, wt::LoadOptions{}, nullptr, &model);
  expect_status(loaded.code(), {WT_OK, WT_ERR_FORMAT, WT_ERR_UNSUPPORTED}, "wt::api::make_model");
  if (g_verbose) std::fprintf(stderr, "load: %s %s\n", wt_status_string(loaded.code()), loaded.message().c_str());
  if (!loaded.is_ok()) {
    if (loaded.message().empty()) fail("make_model failed without a message");
    return 0;
  }
  use_model(model.get());
  return 0;
}

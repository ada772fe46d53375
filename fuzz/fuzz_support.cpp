#include "fuzz_support.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace wt::fuzz {

namespace {
FILE* g_report = nullptr;  // where fail() writes: the real stderr, also after silence_stdio()
}  // namespace

void fail(const char* format, ...) {
  FILE* out = g_report ? g_report : stderr;
  std::va_list args;
  va_start(args, format);
  std::fputs("fuzz check failed: ", out);
  std::vfprintf(out, format, args);
  std::fputc('\n', out);
  va_end(args);
  std::fflush(out);
  std::abort();
}

void expect_status(wt_status status, std::initializer_list<wt_status> allowed, const char* call) {
  for (const wt_status s : allowed)
    if (s == status) return;
  fail("%s returned %s (%s), not one of the statuses it documents for this input", call, wt_status_string(status),
       wt_last_error());
}

void quiet_logs() {
  wt_set_log_callback([](wt_log_level, const char*, void*) {}, nullptr);
}

void silence_stdio() {
  // glibc's stdout and stderr are assignable variables; libFuzzer took its own copy of the
  // stderr pointer at start-up and the sanitizers write to descriptor 2, so their reports
  // still reach the log while the tools' printing goes to /dev/null.
  FILE* null_out = std::fopen("/dev/null", "w");
  if (!null_out) fail("cannot open /dev/null");
  if (!g_report) g_report = stderr;
  stdout = null_out;
  stderr = null_out;
}

test::TinyModelOptions seed_model_options() {
  test::TinyModelOptions o = test::fuzz_model_options(8);  // the harness model's shape, smaller
  o.n_layer = 1;
  o.n_ctx_train = 64;
  return o;
}

wt_model* load_model_bytes(const std::vector<uint8_t>& gguf, const std::string& name) {
  const std::string path = test::temp_file("fuzz_" + name + ".gguf");
  if (!test::write_file(path, gguf)) fail("cannot write %s", path.c_str());
  wt_model* model = nullptr;
  const wt_status st = wt_model_load(path.c_str(), nullptr, &model);
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (st != WT_OK) fail("loading the harness model %s: %s: %s", name.c_str(), wt_status_string(st), wt_last_error());
  return model;
}

bool is_valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto b0 = static_cast<uint8_t>(text[i]);
    size_t len = 0;
    uint32_t cp = 0, min = 0;
    if (b0 < 0x80) {
      ++i;
      continue;
    } else if ((b0 & 0xE0) == 0xC0) {
      len = 2, cp = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
      len = 3, cp = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
      len = 4, cp = b0 & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (text.size() - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto b = static_cast<uint8_t>(text[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

}  // namespace wt::fuzz

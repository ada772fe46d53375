// What the opaque C handles hold, and the guard every entry point runs its body in: it
// records the last error for wt_last_error() and turns any escaping C++ exception into a
// status, so nothing crosses the C ABI.
#pragma once

#include <exception>
#include <memory>
#include <new>
#include <string>

#include "../engine/context.h"
#include "../engine/sampler.h"
#include "../model/chat_template.h"
#include "../model/model.h"
#include "../model/tokenizer.h"
#include "../model/utf8_stream.h"
#include "../status.h"

struct wt_model {
  std::unique_ptr<wt::Model> model;
  std::unique_ptr<wt::Tokenizer> tokenizer;
  wt::ChatTemplate chat;
  wt::Status chat_status;  // why the template is unusable, if it is
};

struct wt_context {
  const wt_model* owner = nullptr;
  std::unique_ptr<wt::Context> ctx;
};

struct wt_sampler {
  wt::Sampler sampler;
};

struct wt_detokenizer {
  const wt_model* owner = nullptr;
  wt::Utf8Stream stream;
};

namespace wt::api {

void set_last_error(const std::string& message);
void clear_last_error();
void log(wt_log_level level, const std::string& text);

inline wt_status report(const Status& st) {
  if (st.is_ok()) {
    clear_last_error();
  } else {
    set_last_error(st.message());
  }
  return st.code();
}

template <typename Body>
wt_status guarded(Body&& body) {
  try {
    return report(body());
  } catch (const std::bad_alloc&) {
    return report(error(WT_ERR_OUT_OF_MEMORY, "out of host memory"));
  } catch (const std::exception& e) {
    return report(error(WT_ERR_INTERNAL, std::string("internal error: ") + e.what()));
  } catch (...) {
    return report(error(WT_ERR_INTERNAL, "internal error: unknown exception"));
  }
}

// wt_model_load after it has opened the file: the model's hparams, vocabulary and weights
// from a validated GGUF, the weights placed on `device` (null: they stay in the file's
// mapping, for the CPU), then the tokenizer and the chat template. A seam of its own so that
// fuzz/fuzz_gguf can build a full handle from bytes in memory (GgufFile::parse_memory).
Status make_model(std::shared_ptr<GgufFile> file, const LoadOptions& options, std::unique_ptr<Backend> device,
                  std::unique_ptr<wt_model>* out);

inline Status require(const void* p, const char* what) {
  return p ? Status::ok() : error(WT_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
}

}  // namespace wt::api

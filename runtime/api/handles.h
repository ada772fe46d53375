// What the opaque C handles hold, and the guard every entry point runs its body in: it
// records the last error for wt_last_error() and turns any escaping C++ exception into a
// status, so nothing crosses the C ABI.
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <thread>

#include "runtime/engine/context.h"
#include "runtime/engine/sampler.h"
#include "runtime/model/chat_reply.h"
#include "runtime/model/chat_template.h"
#include "runtime/model/model.h"
#include "runtime/model/tokenizer.h"
#include "runtime/model/utf8_stream.h"
#include "base/status.h"

struct wt_model {
  std::unique_ptr<wt::Model> model;
  std::unique_ptr<wt::Tokenizer> tokenizer;
  wt::ChatTemplate chat;
  wt::Status chat_status;  // why the template is unusable, if it is
  wt::ReplyStyle reply;    // how the template writes replies (tool calls, reasoning)
};

struct wt_context {
  const wt_model* owner = nullptr;
  std::unique_ptr<wt::Context> ctx;
  mutable std::atomic<std::thread::id> user{};  // the thread inside a call on it, if any
  bool running = false;  // a prefill, decode or generate is running (on the holding thread)
};

struct wt_sampler {
  wt::Sampler sampler;
  mutable std::atomic<std::thread::id> user{};
};

struct wt_detokenizer {
  const wt_model* owner = nullptr;
  wt::Utf8Stream stream;
};

namespace wt::api {

// The per-thread last error. None of these throws. store_last_error is false when there
// is no memory for the message; set_fixed_error records a static text (no memory needed),
// which wt_last_error() gives until the next store or clear.
bool store_last_error(const std::string& message) noexcept;
void set_fixed_error(const char* text) noexcept;
void clear_last_error() noexcept;
void log(wt_log_level level, const std::string& text);

// Runs an entry point's body: its Status, or an escaping exception mapped to one, recorded
// for wt_last_error(). The std::bad_alloc path allocates nothing (the fixed text needs no
// memory), so a failed allocation anywhere in a call, including while its error message is
// stored, is WT_ERR_OUT_OF_MEMORY and never an exception across the C ABI.
template <typename Body>
wt_status guarded(Body&& body) noexcept {
  try {
    const Status st = body();
    if (st.is_ok()) {
      clear_last_error();
      return WT_OK;
    }
    if (store_last_error(st.message())) return st.code();
  } catch (const std::bad_alloc&) {
  } catch (const std::exception& e) {
    if (!store_last_error(std::string("internal error: ") + e.what()))
      set_fixed_error("internal error (an unexpected C++ exception)");
    return WT_ERR_INTERNAL;
  } catch (...) {
    set_fixed_error("internal error: unknown exception");
    return WT_ERR_INTERNAL;
  }
  set_fixed_error("out of host memory");
  return WT_ERR_OUT_OF_MEMORY;
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

// Holds a handle for the calling thread for one call: a context or sampler is used by one
// thread at a time (whittle.h), and a second thread's call is refused with WT_ERR_BUSY
// rather than left to race (one compare-and-swap per call). A call nested on the holding
// thread (from a progress or token callback) passes and leaves the hold to the outer call.
class Claim {
 public:
  Claim(std::atomic<std::thread::id>& user, const char* what) : user_(user) {
    const std::thread::id me = std::this_thread::get_id();
    std::thread::id none{};
    if (user_.compare_exchange_strong(none, me, std::memory_order_acquire)) {
      held_ = true;
    } else if (none != me) {
      status_ = error(WT_ERR_BUSY, std::string(what) + " is in use by another thread (one thread at a time)");
    }
  }
  ~Claim() {
    if (held_) user_.store(std::thread::id{}, std::memory_order_release);
  }
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;
  const Status& status() const { return status_; }

 private:
  std::atomic<std::thread::id>& user_;
  bool held_ = false;
  Status status_;
};

// Marks a context as running the model for one call (prefill, decode, generate), after its
// Claim: a call of that kind nested on the same thread (from the progress or token callback
// of the running one) is refused with WT_ERR_BUSY, since it would change the KV and logits
// under the outer call. Reading calls nested there (logits, stats) still pass.
class RunGuard {
 public:
  RunGuard(wt_context& ctx, const char* what) : ctx_(ctx) {
    if (ctx_.running) {
      status_ = error(WT_ERR_BUSY, std::string(what) + " was called from a callback of a call running on the same "
                                                        "context: a callback may read the context, not run it");
    } else {
      ctx_.running = held_ = true;
    }
  }
  ~RunGuard() {
    if (held_) ctx_.running = false;
  }
  RunGuard(const RunGuard&) = delete;
  RunGuard& operator=(const RunGuard&) = delete;
  const Status& status() const { return status_; }

 private:
  wt_context& ctx_;
  bool held_ = false;
  Status status_;
};

}  // namespace wt::api

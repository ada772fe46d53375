// wt_context_state_*: a context's state saved to a buffer or a file, and loaded back
// (runtime/engine/context_state.cpp has the format).
#include <cstdio>
#include <string>

#include "handles.h"
#include "runtime/engine/state_io.h"

using wt::Status;
using wt::api::guarded;
using wt::api::require;

namespace {

// A FILE* closed on every way out.
struct File {
  std::FILE* f = nullptr;
  File(const char* path, const char* mode) : f(std::fopen(path, mode)) {}
  ~File() {
    if (f) std::fclose(f);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  Status close() {
    const int rc = std::fclose(f);
    f = nullptr;
    return rc == 0 ? Status::ok() : wt::error(WT_ERR_IO, "closing the state file failed");
  }
};

}  // namespace

extern "C" {

wt_status wt_context_state_size(const wt_context* ctx, size_t* out_bytes) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    WT_TRY(require(out_bytes, "out_bytes"));
    *out_bytes = static_cast<size_t>(ctx->ctx->state_bytes());
    return Status::ok();
  });
}

wt_status wt_context_state_save(wt_context* ctx, void* buffer, size_t capacity, size_t* out_bytes) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    const wt::api::RunGuard run(*ctx, "wt_context_state_save");
    WT_TRY(run.status());
    WT_TRY(require(out_bytes, "out_bytes"));
    const size_t need = static_cast<size_t>(ctx->ctx->state_bytes());
    if (!buffer || capacity < need) {
      *out_bytes = need;  // the needed size, as the other calls with caller buffers
      return wt::error(WT_ERR_BUFFER_TOO_SMALL, "the state needs " + std::to_string(need) + " bytes; the buffer has " +
                                                    std::to_string(buffer ? capacity : 0));
    }
    wt::StateSink sink(buffer, capacity);
    WT_TRY(ctx->ctx->save_state(sink));
    *out_bytes = sink.written();
    return Status::ok();
  });
}

wt_status wt_context_state_load(wt_context* ctx, const void* state, size_t n_bytes) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    const wt::api::RunGuard run(*ctx, "wt_context_state_load");
    WT_TRY(run.status());
    WT_TRY(require(state, "state"));
    wt::StateSource source(state, n_bytes);
    return ctx->ctx->load_state(source);
  });
}

wt_status wt_context_state_save_file(wt_context* ctx, const char* path) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    const wt::api::RunGuard run(*ctx, "wt_context_state_save_file");
    WT_TRY(run.status());
    WT_TRY(require(path, "path"));
    // Written beside the target and renamed over it: a reader never sees half a state, and
    // a failed save leaves an older file as it was.
    const std::string tmp = std::string(path) + ".tmp";
    File file(tmp.c_str(), "wb");
    if (!file.f) return wt::error(WT_ERR_IO, "cannot create " + tmp);
    wt::StateSink sink(file.f);
    Status st = ctx->ctx->save_state(sink);
    if (st.is_ok()) st = file.close();
    if (st.is_ok() && std::rename(tmp.c_str(), path) != 0) st = wt::error(WT_ERR_IO, std::string("cannot rename the state to ") + path);
    if (!st.is_ok()) std::remove(tmp.c_str());
    return st;
  });
}

wt_status wt_context_state_load_file(wt_context* ctx, const char* path) {
  return guarded([&]() -> Status {
    WT_TRY(require(ctx, "ctx"));
    const wt::api::Claim claim(ctx->user, "ctx");
    WT_TRY(claim.status());
    const wt::api::RunGuard run(*ctx, "wt_context_state_load_file");
    WT_TRY(run.status());
    WT_TRY(require(path, "path"));
    File file(path, "rb");
    if (!file.f) return wt::error(WT_ERR_IO, std::string("cannot open ") + path);
    wt::StateSource source(file.f);
    return ctx->ctx->load_state(source);
  });
}

}  // extern "C"

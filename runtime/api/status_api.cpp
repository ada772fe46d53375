// Version, status names, the per-thread last error and the log callback.
#include <cstdio>
#include <mutex>

#include "handles.h"
#include "params_abi.h"

namespace wt::api {

namespace {

thread_local std::string t_last_error;
thread_local const char* t_fixed_error = nullptr;  // wins over t_last_error when set

std::mutex g_log_mutex;
wt_log_callback g_log_callback = nullptr;
void* g_log_user = nullptr;

}  // namespace

bool store_last_error(const std::string& message) noexcept {
  try {
    t_last_error = message;
  } catch (...) {
    return false;
  }
  t_fixed_error = nullptr;
  return true;
}

void set_fixed_error(const char* text) noexcept { t_fixed_error = text; }

void clear_last_error() noexcept {
  t_last_error.clear();
  t_fixed_error = nullptr;
}

void log(wt_log_level level, const std::string& text) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  if (g_log_callback) {
    g_log_callback(level, text.c_str(), g_log_user);
  } else if (level <= WT_LOG_WARN) {
    std::fprintf(stderr, "whittle: %s\n", text.c_str());
  }
}

}  // namespace wt::api

extern "C" {

const char* wt_version(void) {
#define WT_STR2(x) #x
#define WT_STR(x) WT_STR2(x)
  return WT_STR(WHITTLE_VERSION_MAJOR) "." WT_STR(WHITTLE_VERSION_MINOR) "." WT_STR(WHITTLE_VERSION_PATCH);
#undef WT_STR
#undef WT_STR2
}

int32_t wt_api_version(void) { return WT_API_VERSION; }

const char* wt_status_string(wt_status status) {
  switch (wt::api::raw_value(status)) {  // any integer a caller passes, not only the enumerators
    case WT_OK: return "WT_OK";
    case WT_ERR_INVALID_ARGUMENT: return "WT_ERR_INVALID_ARGUMENT";
    case WT_ERR_FORMAT: return "WT_ERR_FORMAT";
    case WT_ERR_UNSUPPORTED: return "WT_ERR_UNSUPPORTED";
    case WT_ERR_IO: return "WT_ERR_IO";
    case WT_ERR_OUT_OF_MEMORY: return "WT_ERR_OUT_OF_MEMORY";
    case WT_ERR_BUDGET: return "WT_ERR_BUDGET";
    case WT_ERR_CONTEXT_FULL: return "WT_ERR_CONTEXT_FULL";
    case WT_ERR_BUFFER_TOO_SMALL: return "WT_ERR_BUFFER_TOO_SMALL";
    case WT_ERR_BACKEND: return "WT_ERR_BACKEND";
    case WT_ERR_ABORTED: return "WT_ERR_ABORTED";
    case WT_ERR_INTERNAL: return "WT_ERR_INTERNAL";
    case WT_ERR_BUSY: return "WT_ERR_BUSY";
  }
  return "WT_ERR_UNKNOWN";
}

const char* wt_last_error(void) {
  return wt::api::t_fixed_error ? wt::api::t_fixed_error : wt::api::t_last_error.c_str();
}

void wt_set_log_callback(wt_log_callback callback, void* user) {
  std::lock_guard<std::mutex> lock(wt::api::g_log_mutex);
  wt::api::g_log_callback = callback;
  wt::api::g_log_user = user;
}

}  // extern "C"

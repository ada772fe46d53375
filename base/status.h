// Internal status type. Every fallible internal call returns Status; the C API turns it
// into a wt_status plus the per-thread last-error text.
#pragma once

#include <string>
#include <utility>

#include "whittle.h"

namespace wt {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(wt_status code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == WT_OK; }
  explicit operator bool() const { return is_ok(); }
  wt_status code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  wt_status code_ = WT_OK;
  std::string message_;
};

inline Status error(wt_status code, std::string message) { return Status(code, std::move(message)); }

}  // namespace wt

// The one control-flow macro: return early on a non-OK status.
#define WT_TRY(expr)                         \
  do {                                       \
    ::wt::Status wt_try_status_ = (expr);    \
    if (!wt_try_status_.is_ok()) return wt_try_status_; \
  } while (0)

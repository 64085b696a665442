// A result code plus a human-readable message; the currency of every internal call.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "hcl.h"

namespace hcl {

// Success is a code and a null pointer, so the hot paths that pass Status
// around construct and destroy almost nothing; the message lives on the heap
// only when there is an error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(hclResult_t code, std::string message)
      : code_(code), message_(std::make_unique<std::string>(std::move(message))) {}
  Status(const Status& o) : code_(o.code_), message_(o.message_ ? std::make_unique<std::string>(*o.message_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) *this = Status(o);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status success() { return {}; }
  bool ok() const { return code_ == hclSuccess; }
  hclResult_t code() const { return code_; }
  const std::string& message() const { return message_ ? *message_ : empty(); }

  // Prefixes the message with `context` (the API call name, say), unless a
  // lower layer already named the same call first.
  Status withContext(const std::string& context) const {
    if (ok()) return *this;
    const std::string& text = message();
    if (text.size() > context.size() && text.compare(0, context.size(), context) == 0 &&
        text.compare(context.size(), 2, ": ") == 0)
      return *this;
    return {code_, context + ": " + text};
  }

 private:
  static const std::string& empty() {
    static const std::string kEmpty;
    return kEmpty;
  }
  hclResult_t code_ = hclSuccess;
  std::unique_ptr<std::string> message_;
};

inline Status invalidArgument(std::string msg) { return {hclInvalidArgument, std::move(msg)}; }
inline Status invalidUsage(std::string msg) { return {hclInvalidUsage, std::move(msg)}; }
inline Status systemError(std::string msg) { return {hclSystemError, std::move(msg)}; }
inline Status remoteError(std::string msg) { return {hclRemoteError, std::move(msg)}; }
inline Status internalError(std::string msg) { return {hclInternalError, std::move(msg)}; }
// A failed system call: "<what>: <strerror(err)>".
inline Status errnoError(const std::string& what, int err) {
  return {hclSystemError, what + ": " + std::strerror(err)};
}

}  // namespace hcl

#define HCL_TRY(expr)                        \
  do {                                       \
    ::hcl::Status hcl_try_status_ = (expr);  \
    if (!hcl_try_status_.ok()) return hcl_try_status_; \
  } while (0)

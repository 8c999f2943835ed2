// Status and Result<T>: how cairn reports failures a user or the environment can cause.
//
// Every fallible function returns a Status (no value) or a Result<T> (a value or a Status).
// Codes are domain-level; the server maps them to MLflow error codes and HTTP statuses at its
// edge. Exceptions thrown by libraries are caught where they arise and turned into a Status.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace cairn {

enum class StatusCode {
  kOk,
  kInvalidArgument,    // the caller sent something malformed or out of range
  kNotFound,           // the named resource does not exist
  kAlreadyExists,      // a resource with that identity exists
  kFailedPrecondition, // the resource is in a state that forbids the operation
  kResourceExhausted,  // a size or count limit was exceeded
  kUnimplemented,      // the operation is not supported by this backend
  kUnavailable,        // a dependency (disk, server) could not be reached; retrying may help
  kInternal,           // a bug or an unexpected failure inside cairn
  kUnauthenticated,    // no credentials, or ones that do not identify anybody
  kPermissionDenied,   // the caller is known but may not do this
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Adds context in front of the message: "loading lock: <message>".
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status Unauthenticated(std::string m) {
  return {StatusCode::kUnauthenticated, std::move(m)};
}
inline Status PermissionDenied(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}

// A value of type T, or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Internal("Result constructed from an OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

[[noreturn]] void CheckFailed(const char* file, int line, const char* expr);

}  // namespace cairn

// Invariants that only a bug can break. Never use on untrusted input.
#define CAIRN_CHECK(expr) \
  ((expr) ? (void)0 : ::cairn::CheckFailed(__FILE__, __LINE__, #expr))

#define CAIRN_CONCAT_INNER(a, b) a##b
#define CAIRN_CONCAT(a, b) CAIRN_CONCAT_INNER(a, b)

#define CAIRN_RETURN_IF_ERROR(expr)              \
  do {                                           \
    ::cairn::Status cairn_status_ = (expr);      \
    if (!cairn_status_.ok()) return cairn_status_; \
  } while (0)

#define CAIRN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#define CAIRN_ASSIGN_OR_RETURN(lhs, expr) \
  CAIRN_ASSIGN_OR_RETURN_IMPL(CAIRN_CONCAT(cairn_result_, __LINE__), lhs, expr)

// Status and StatusOr<T>: errors as values.
//
// Every fallible boundary in Muster returns a Status (no value) or a
// StatusOr<T> (a value or an error). Exceptions from third-party libraries are
// caught at their adapter and converted here. A Status carries a code, a
// human-readable message, and, for validation errors, the path of the field
// that was rejected ("spec.resources.gpus").
//
// Thread-safety: values; safe to copy between threads.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace muster {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller's input is wrong; message names the field
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kOutOfRange,
  kUnavailable,
  kInternal,  // a bug: logged and counted
  kDataLoss,
  kPermissionDenied,   // the caller may not do this
  kResourceExhausted,  // a rate or size limit was hit
  kUnauthenticated,    // no valid credential: who calls is not known
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message, std::string field = {})
      : code_(code), message_(std::move(message)), field_(std::move(field)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Path of the offending field for validation errors, or empty.
  const std::string& field() const { return field_; }

  // "field: message" or "CODE: message".
  std::string ToString() const;

  // Returns a copy whose field path is prefixed by `prefix` ("spec" + "gpus"
  // gives "spec.gpus"), so nested validators can report full paths.
  Status WithFieldPrefix(const std::string& prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string field_;
};

inline Status InvalidArgument(std::string msg, std::string field = {}) {
  return Status(StatusCode::kInvalidArgument, std::move(msg), std::move(field));
}
inline Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
inline Status FailedPrecondition(std::string msg) { return Status(StatusCode::kFailedPrecondition, std::move(msg)); }
inline Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }
inline Status DataLoss(std::string msg) { return Status(StatusCode::kDataLoss, std::move(msg)); }
inline Status PermissionDenied(std::string msg) { return Status(StatusCode::kPermissionDenied, std::move(msg)); }
inline Status Unauthenticated(std::string msg) { return Status(StatusCode::kUnauthenticated, std::move(msg)); }
inline Status Unavailable(std::string msg) { return Status(StatusCode::kUnavailable, std::move(msg)); }

// A value of type T or a non-OK Status. Accessing value() of an error is a bug.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace muster

#define MUSTER_CONCAT_INNER(a, b) a##b
#define MUSTER_CONCAT(a, b) MUSTER_CONCAT_INNER(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::muster::Status _muster_status = (expr);        \
    if (!_muster_status.ok()) return _muster_status; \
  } while (0)

// `lhs = value of expr` or return its error. lhs may be a declaration.
// It expands to several statements: under if/for/while, always use braces
// (scripts/check_layering.sh rejects the unbraced form).
#define ASSIGN_OR_RETURN(lhs, expr)                                                                     \
  auto MUSTER_CONCAT(_muster_or_, __LINE__) = (expr);                                                   \
  if (!MUSTER_CONCAT(_muster_or_, __LINE__).ok()) return MUSTER_CONCAT(_muster_or_, __LINE__).status(); \
  lhs = std::move(MUSTER_CONCAT(_muster_or_, __LINE__)).value()  // NOLINT(bugprone-macro-parentheses): a declaration

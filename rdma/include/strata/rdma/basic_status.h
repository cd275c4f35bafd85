// BasicStatus and BasicResult: the one implementation of errors as values
// for every standalone component (rdma/, logservice/, the page server, the
// log service client that InnoDB links).
//
// No exception crosses a module boundary. Every fallible call returns a
// status (or a result carrying either a value or a status) marked
// [[nodiscard]], so a caller cannot silently drop an error. The message says
// what failed and, for system calls and verbs, names the failing call.
//
// The mechanics live here once; the vocabulary does not. Each component
// derives its own Status from BasicStatus<its StatusCode> and adds the
// factories and predicates its callers act on: a transport's codes (Busy,
// Closed, ProtocolError) and a log store's (NoSpace, Corruption,
// NeedsRecovery) mean different things to the caller, so one merged enum
// would make every caller's switch name codes that cannot reach it.
//
// Contract for Code: an enum with kOk, and a function
// `std::string_view StatusCodeName(Code)` in Code's namespace (found by
// argument-dependent lookup) for ToString().
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace strata::rdma {

template <typename Code>
class [[nodiscard]] BasicStatus {
 public:
  BasicStatus() = default;  // OK
  BasicStatus(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "OK", or "<code name>: <message>".
  std::string ToString() const {
    if (ok()) return "OK";
    std::string s(StatusCodeName(code_));
    s += ": ";
    s += message_;
    return s;
  }

  // Explicitly discard a status where ignoring it is the documented intent.
  void IgnoreError() const {}

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Either a value or a non-OK status S. Each component names it
// `template <typename T> using Result = BasicResult<T, Status>`.
template <typename T, typename S>
class [[nodiscard]] BasicResult {
 public:
  BasicResult(T value) : value_(std::move(value)) {}                         // NOLINT: implicit by design
  BasicResult(S status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return value_.has_value(); }
  const S& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  S status_;
};

}  // namespace strata::rdma

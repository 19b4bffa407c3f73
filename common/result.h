// Error and Result<T>: the project's small status types. Modules return these instead of throwing;
// library exceptions (yaml-cpp, nlohmann-json) are caught at the edge and turned into an Error.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace rdmahd {

// A failure with enough context to act on: what was being done, to which file/device/peer, and the
// errno when the kernel said no. `message` is complete on its own ("open /sys/...: Permission denied").
struct Error {
  std::string message;
  int errno_value = 0;  // 0 when the failure did not come from a syscall

  static Error FromErrno(std::string what, int err);  // "what: strerror(err)"
};

// Either a value or an Error. Deliberately minimal (C++20 has no std::expected).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}       // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> v_;
};

// Result<void> equivalent.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  static Status Ok() { return {}; }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace rdmahd

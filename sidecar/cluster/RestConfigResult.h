#pragma once
// A value or the reason it could not be produced. Loading cluster access touches files, YAML,
// JSON and child processes; every failure becomes one human-readable message that names the file,
// the line and the key path, and never contains a secret (token, key, env value).
#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace leasehold::cluster {

struct LoadError {
  std::string message;
};

template <class T>
class LoadResult {
 public:
  LoadResult(T value) : state_(std::move(value)) {}          // NOLINT: implicit by design
  LoadResult(LoadError error) : state_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  const T& value() const& {
    assert(ok());
    return std::get<T>(state_);
  }
  T& value() & {
    assert(ok());
    return std::get<T>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(state_));
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  const LoadError& error() const {
    assert(!ok());
    return std::get<LoadError>(state_);
  }
  const std::string& message() const { return error().message; }

 private:
  std::variant<T, LoadError> state_;
};

}  // namespace leasehold::cluster

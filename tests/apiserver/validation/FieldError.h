// field.Error of k8s.io/apimachinery: one invalid field of a request body, the cause listed in a
// 422 Invalid Status, with the real server's message texts and reasons.
#pragma once

#include <string>
#include <vector>

namespace apiserver {

struct FieldError {
  enum Type { kInvalid, kRequired, kForbidden, kNotSupported, kTooLong } type = kInvalid;
  std::string field;
  std::string value;  // already formatted (e.g. "\"x\"", "0", "0x0")
  std::string detail;
  std::string body() const;  // message without "field: "
  std::string error() const { return field + ": " + body(); }
  const char* reason() const;
};
using FieldErrors = std::vector<FieldError>;

}  // namespace apiserver

// Small helpers of the test API server: Go-compatible time parsing, Kubernetes name/label
// validation, field errors, JSON depth checks. No networking.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace apiserver {

// time.Parse of Go for the layouts RFC3339Micro ("2006-01-02T15:04:05.000000Z07:00", micro=true)
// and RFC3339 ("2006-01-02T15:04:05Z07:00"), with Go's error texts.
struct GoTime {
  bool ok = false;
  int64_t unix_s = 0;
  int64_t nanos = 0;
  std::string err;  // "parsing time ..." when !ok
};
GoTime go_parse_time(const std::string& value, bool micro);
std::string format_micro(int64_t unix_s, int64_t nanos);  // 2006-01-02T15:04:05.000000Z
std::string format_rfc3339(int64_t unix_s);               // 2006-01-02T15:04:05Z
int64_t unix_now_s();
std::string human_duration(int64_t seconds);  // kubectl's AGE column

std::string go_quote(std::string_view s);

// A field.Error of k8s.io/apimachinery.
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

std::vector<std::string> dns1123_subdomain_errors(const std::string& v);
std::vector<std::string> qualified_name_errors(const std::string& v);
std::vector<std::string> label_value_errors(const std::string& v);
FieldErrors validate_object_name(const std::string& name, const std::string& generate_name,
                                 const std::string& path);
FieldErrors validate_labels(const nlohmann::ordered_json& labels, const std::string& path);
FieldErrors validate_annotations(const nlohmann::ordered_json& ann, const std::string& path);

// Nesting depth of a JSON text (strings skipped); guards the recursive parser.
size_t json_depth(std::string_view s);

std::string random_suffix(size_t n);  // Kubernetes' name-generation alphabet
std::string new_uuid();

}  // namespace apiserver

// Name, label and annotation validation of k8s.io/apimachinery (see MetadataValidation.h).
#include "validation/MetadataValidation.h"

#include <cctype>
#include <string_view>

#include "gocompat/GoQuote.h"

namespace apiserver {

namespace {
bool alnum_lower(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool alnum(char c) {
  return alnum_lower(c) || (c >= 'A' && c <= 'Z');
}

bool is_dns1123_label_body(std::string_view s) {
  if (s.empty() || !alnum_lower(s.front()) || !alnum_lower(s.back())) return false;
  for (char c : s)
    if (!alnum_lower(c) && c != '-') return false;
  return true;
}

bool is_qualified_name_part(std::string_view s) {
  if (s.empty() || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

const char* kQualifiedNameMsg =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
}  // namespace

std::vector<std::string> dns1123_subdomain_errors(const std::string& v) {
  std::vector<std::string> errs;
  if (v.size() > 253) errs.push_back("must be no more than 253 characters");
  bool ok = !v.empty();
  size_t start = 0;
  while (ok) {
    size_t dot = v.find('.', start);
    std::string_view part = std::string_view(v).substr(
        start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!is_dns1123_label_body(part)) ok = false;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!ok)
    errs.push_back(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
        "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
        "used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  return errs;
}

std::vector<std::string> qualified_name_errors(const std::string& v) {
  std::vector<std::string> errs;
  std::string name = v;
  auto slash = v.find('/');
  if (slash != std::string::npos) {
    std::string prefix = v.substr(0, slash);
    name = v.substr(slash + 1);
    if (v.find('/', slash + 1) != std::string::npos) {
      errs.push_back(
          "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
          "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
          "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
          "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
      return errs;
    }
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (auto& e : dns1123_subdomain_errors(prefix))
        errs.push_back("prefix part " + e);
    }
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errs.push_back("name part must be no more than 63 characters");
  }
  if (!is_qualified_name_part(name)) errs.push_back(kQualifiedNameMsg);
  return errs;
}

std::vector<std::string> label_value_errors(const std::string& v) {
  std::vector<std::string> errs;
  if (v.empty()) return errs;
  if (v.size() > 63) errs.push_back("must be no more than 63 characters");
  if (!is_qualified_name_part(v))
    errs.push_back(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
        "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
  return errs;
}

FieldErrors validate_object_name(const std::string& name, const std::string& generate_name,
                                 const std::string& path) {
  FieldErrors errs;
  if (name.empty()) {
    if (generate_name.empty())
      errs.push_back({FieldError::kRequired, path, "", "name or generateName is required"});
    return errs;
  }
  for (auto& m : dns1123_subdomain_errors(name))
    errs.push_back({FieldError::kInvalid, path, go_quote(name), m});
  return errs;
}

FieldErrors validate_labels(const nlohmann::ordered_json& labels, const std::string& path) {
  FieldErrors errs;
  if (!labels.is_object()) return errs;
  for (auto& [k, v] : labels.items()) {
    for (auto& m : qualified_name_errors(k))
      errs.push_back({FieldError::kInvalid, path, go_quote(k), m});
    std::string val = v.is_string() ? v.get<std::string>() : "";
    for (auto& m : label_value_errors(val))
      errs.push_back({FieldError::kInvalid, path, go_quote(val), m});
  }
  return errs;
}

FieldErrors validate_annotations(const nlohmann::ordered_json& ann, const std::string& path) {
  FieldErrors errs;
  if (!ann.is_object()) return errs;
  size_t total = 0;
  for (auto& [k, v] : ann.items()) {
    std::string lower;
    for (char c : k)
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (auto& m : qualified_name_errors(lower))
      errs.push_back({FieldError::kInvalid, path, go_quote(k), m});
    total += k.size() + (v.is_string() ? v.get<std::string>().size() : 0);
  }
  if (total > 256 * 1024)
    errs.push_back({FieldError::kTooLong, path, "", "must have at most 262144 bytes"});
  return errs;
}

}  // namespace apiserver

#include "config/KubernetesNameRules.h"

namespace leasehold::config {

namespace {

bool isLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool isAlnum(char c) {
  return isLowerAlnum(c) || (c >= 'A' && c <= 'Z');
}

}  // namespace

std::optional<std::string> KubernetesNameRules::dns1123Label(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 63) return "must be at most 63 characters";
  for (const char c : name) {
    if (!isLowerAlnum(c) && c != '-') {
      return "must consist of lowercase letters, digits and '-' (a DNS-1123 label)";
    }
  }
  if (!isLowerAlnum(name.front()) || !isLowerAlnum(name.back())) {
    return "must start and end with a lowercase letter or digit (a DNS-1123 label)";
  }
  return std::nullopt;
}

std::optional<std::string> KubernetesNameRules::dns1123Subdomain(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 253) return "must be at most 253 characters";
  for (const char c : name) {
    if (!isLowerAlnum(c) && c != '-' && c != '.') {
      return "must consist of lowercase letters, digits, '-' and '.' (a DNS-1123 subdomain)";
    }
  }
  // Each dot-separated part must start and end with an alphanumeric.
  std::size_t start = 0;
  for (;;) {
    const auto dot = name.find('.', start);
    const auto part = name.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (part.empty() || !isLowerAlnum(part.front()) || !isLowerAlnum(part.back())) {
      return "every '.'-separated part must start and end with a lowercase letter or digit "
             "(a DNS-1123 subdomain)";
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return std::nullopt;
}

std::optional<std::string> KubernetesNameRules::labelKey(std::string_view key) {
  std::string_view name = key;
  const auto slash = key.find('/');
  if (slash != std::string_view::npos) {
    if (auto problem = dns1123Subdomain(key.substr(0, slash))) return "prefix " + *problem;
    name = key.substr(slash + 1);
  }
  if (name.empty()) return "name part must not be empty";
  if (name.size() > 63) return "name part must be at most 63 characters";
  for (const char c : name) {
    if (!isAlnum(c) && c != '-' && c != '_' && c != '.') {
      return "name part must consist of letters, digits, '-', '_' and '.'";
    }
  }
  if (!isAlnum(name.front()) || !isAlnum(name.back())) {
    return "name part must start and end with a letter or digit";
  }
  return std::nullopt;
}

}  // namespace leasehold::config

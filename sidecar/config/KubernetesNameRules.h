#pragma once
// The API server's naming rules, checked before start-up so a typo fails fast with a clear
// message instead of a 422 from the server later. Each check returns why a name is invalid, or
// nothing when it is valid.
#include <optional>
#include <string>
#include <string_view>

namespace leasehold::config {

class KubernetesNameRules {
 public:
  // Object names such as a Lease's: lowercase alphanumerics, '-' and '.', alphanumeric at both
  // ends, at most 253 characters.
  static std::optional<std::string> dns1123Subdomain(std::string_view name);
  // Namespace names: lowercase alphanumerics and '-', alphanumeric at both ends, at most 63.
  static std::optional<std::string> dns1123Label(std::string_view name);
  // Label keys: [prefix/]name, prefix a DNS-1123 subdomain, name at most 63 characters of
  // alphanumerics, '-', '_', '.', alphanumeric at both ends.
  static std::optional<std::string> labelKey(std::string_view key);
};

}  // namespace leasehold::config

#include "net/HttpHeaders.h"

namespace leasehold::net {
namespace {

char lowerAscii(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

}  // namespace

bool HttpHeaders::equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lowerAscii(a[i]) != lowerAscii(b[i])) return false;
  }
  return true;
}

std::optional<std::string_view> HttpHeaders::get(std::string_view name) const {
  for (const auto& [fieldName, value] : fields_) {
    if (equalsIgnoreCase(fieldName, name)) return std::string_view(value);
  }
  return std::nullopt;
}

}  // namespace leasehold::net

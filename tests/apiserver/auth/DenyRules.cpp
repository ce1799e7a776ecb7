// --deny rules (see DenyRules.h).
#include "auth/DenyRules.h"

namespace apiserver {

void DenyRules::add(const std::string& spec) {
  auto a = spec.rfind(':');
  if (a == std::string::npos) return;
  auto b = spec.rfind(':', a - 1);
  if (b == std::string::npos) return;
  rules_.push_back({spec.substr(0, b), spec.substr(b + 1, a - b - 1), spec.substr(a + 1)});
}

bool DenyRules::denies(const RequestInfo& info) const {
  bool denied = false;
  for (auto& d : rules_)
    if ((d[0] == "*" || d[0] == info.user) && (d[1] == "*" || d[1] == info.verb) &&
        (d[2] == "*" || d[2] == info.resource))
      denied = true;
  return denied;
}

}  // namespace apiserver

// --deny USER:VERB:RESOURCE rules: always 403, checked before RBAC and also for admins, so a
// test can take one right away from one client ("*" matches anything).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "http/RequestInfo.h"

namespace apiserver {

class DenyRules {
 public:
  void add(const std::string& spec);  // user:verb:resource (the user may contain ':'); else ignored
  bool denies(const RequestInfo& info) const;

 private:
  std::vector<std::array<std::string, 3>> rules_;
};

}  // namespace apiserver

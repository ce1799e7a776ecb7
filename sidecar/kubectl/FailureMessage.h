#pragma once
// One line for an API request that failed, naming what was refused and why: a missing Lease,
// an RBAC refusal (the verb and resource, so the operator knows which rule is missing), refused
// credentials, a server that did not answer (with its address).
#include <string>

#include "kube/ApiTransport.h"

namespace leasehold::kubectl {

struct ApiAction {
  std::string verb;  // get, list, watch, patch
  std::string ns;    // "" = every namespace
  std::string name;  // "" = the collection
};

class FailureMessage {
 public:
  static std::string describe(const kube::ApiResponse& response, const ApiAction& action,
                              const std::string& server);
};

}  // namespace leasehold::kubectl

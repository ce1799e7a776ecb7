#pragma once
// A Kubernetes Lease's name as the status API and LEASEHOLD_LEASE give it
// (election::LockName): "namespace" beside "lease" in /leader, NAMESPACE/NAME in one string.
#include <string>

#include "election/LockName.h"

namespace leasehold::kube {

inline election::LockName leaseLockName(const std::string& ns, const std::string& name) {
  return {name, "namespace", ns, ns + "/" + name};
}

}  // namespace leasehold::kube

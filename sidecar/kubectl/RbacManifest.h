#pragma once
// `kubectl leasehold rbac LEASE --serviceaccount SA`: the objects that give one workload leader
// election on one Lease, as YAML for `kubectl apply -f -`, for users who keep their RBAC outside
// the chart. The same objects as an entry of the chart's `leases` value (templates/leases.yaml;
// tests/deploy/test_kubectl_rbac.py compares them): the Lease (empty: the first replica takes
// it), a Role that may get/update/watch/list that Lease alone and create/patch Events, and a
// RoleBinding to the ServiceAccount. No create on leases: Kubernetes cannot limit it by name.
#include <optional>
#include <string>

namespace leasehold::kubectl {

struct RbacRequest {
  std::string lease;
  std::string ns;
  std::string serviceAccount;
  // --fast-failover: also get/list/watch on pods (the chart's `leases` entry's fastFailover).
  bool fastFailover = false;
};

class RbacManifest {
 public:
  // Why the request cannot be written (a name the API server would refuse), or nothing.
  static std::optional<std::string> check(const RbacRequest& request);
  // The YAML stream: Lease, Role, RoleBinding, separated by "---".
  static std::string yaml(const RbacRequest& request);
};

}  // namespace leasehold::kubectl

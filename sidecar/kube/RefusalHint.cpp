#include "kube/RefusalHint.h"

namespace leasehold::kube {

std::string refusalHint(Connection connection, const std::string& verb, int code) {
  if (code == 401) return "the credentials were not accepted";
  if (code != 403) return "";
  if (connection == Connection::kSide) return "the credentials lack a permission (RBAC)";
  // The chart and manifests/rbac.yaml make the Lease and grant no create (Kubernetes cannot
  // limit create by name): a create refused means the Lease is not there.
  if (verb == "create")
    return "the Lease does not exist and this ServiceAccount may not create it: make the Lease "
           "(the chart and manifests/rbac.yaml do) or grant create on leases";
  return "this ServiceAccount may not " + verb +
         " the Lease: the Role's resourceNames must name it (--lease-name)";
}

std::string missingGrant(const std::string& verb, const std::string& group,
                         const std::string& resource, const std::string& name) {
  return "this ServiceAccount may not " + verb + " " + resource +
         (name.empty() ? "" : " \"" + name + "\"") +
         " (RBAC): its Role needs the rule {apiGroups: [\"" + group + "\"], resources: [" +
         resource + "]" + (name.empty() ? "" : ", resourceNames: [" + name + "]") + ", verbs: [" +
         verb + "]}";
}

}  // namespace leasehold::kube

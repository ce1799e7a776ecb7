#include "kubectl/RbacManifest.h"

#include "config/KubernetesNameRules.h"

namespace leasehold::kubectl {
namespace {

// The names are checked (RbacManifest::check) to be DNS names: nothing in them needs quoting
// but the quotes YAML readers of every version agree on.
std::string quoted(const std::string& s) {
  return "\"" + s + "\"";
}

std::string metadata(const std::string& name, const std::string& ns) {
  return "metadata:\n"
         "  name: " +
         quoted(name) +
         "\n"
         "  namespace: " +
         quoted(ns) +
         "\n"
         "  labels:\n"
         "    app.kubernetes.io/part-of: leasehold\n"
         "    app.kubernetes.io/managed-by: kubectl-leasehold\n";
}

}  // namespace

std::optional<std::string> RbacManifest::check(const RbacRequest& r) {
  using config::KubernetesNameRules;
  if (auto e = KubernetesNameRules::dns1123Subdomain(r.lease))
    return "the Lease name \"" + r.lease + "\": " + *e;
  if (auto e = KubernetesNameRules::dns1123Label(r.ns))
    return "the namespace \"" + r.ns + "\": " + *e;
  if (auto e = KubernetesNameRules::dns1123Subdomain(r.serviceAccount))
    return "--serviceaccount \"" + r.serviceAccount + "\": " + *e;
  // The Role and RoleBinding are named leasehold-<lease>.
  if (auto e = KubernetesNameRules::dns1123Subdomain("leasehold-" + r.lease))
    return "the Lease name: too long for the Role's name leasehold-<lease> (" + *e + ")";
  return std::nullopt;
}

std::string RbacManifest::yaml(const RbacRequest& r) {
  const std::string role = "leasehold-" + r.lease;
  return "# kubectl leasehold rbac: leader election for ServiceAccount " + r.serviceAccount +
         " on Lease " + r.ns + "/" + r.lease +
         ".\n"
         "# The Lease, empty: the first replica takes it. Never delete it while fenced writers\n"
         "# exist: its leaseTransitions is the fencing token.\n"
         "apiVersion: coordination.k8s.io/v1\n"
         "kind: Lease\n" +
         metadata(r.lease, r.ns) +
         "spec: {}\n"
         "---\n"
         "# No create on leases (Kubernetes cannot limit it by name): get, update, watch and\n"
         "# list this Lease alone, and the Events of leadership changes.\n"
         "apiVersion: rbac.authorization.k8s.io/v1\n"
         "kind: Role\n" +
         metadata(role, r.ns) +
         "rules:\n"
         "  - apiGroups: [\"coordination.k8s.io\"]\n"
         "    resources: [\"leases\"]\n"
         "    resourceNames: [" +
         quoted(r.lease) +
         "]\n"
         "    verbs: [\"get\", \"update\", \"watch\", \"list\"]\n"
         "  - apiGroups: [\"\", \"events.k8s.io\"]\n"
         "    resources: [\"events\"]\n"
         "    verbs: [\"create\", \"patch\"]\n" +
         (r.fastFailover ? std::string("  # --fast-failover: the holder's pod, listed and watched "
                                       "by name (RBAC cannot\n"
                                       "  # limit list or watch by name).\n"
                                       "  - apiGroups: [\"\"]\n"
                                       "    resources: [\"pods\"]\n"
                                       "    verbs: [\"get\", \"list\", \"watch\"]\n")
                         : std::string()) +
         "---\n"
         "apiVersion: rbac.authorization.k8s.io/v1\n"
         "kind: RoleBinding\n" +
         metadata(role, r.ns) +
         "roleRef:\n"
         "  apiGroup: rbac.authorization.k8s.io\n"
         "  kind: Role\n"
         "  name: " +
         quoted(role) +
         "\n"
         "subjects:\n"
         "  - kind: ServiceAccount\n"
         "    name: " +
         quoted(r.serviceAccount) +
         "\n"
         "    namespace: " +
         quoted(r.ns) + "\n";
}

}  // namespace leasehold::kubectl

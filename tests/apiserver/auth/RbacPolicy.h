// RBAC as the --rbac files declare it: Roles, ClusterRoles and their bindings to users, groups
// and service accounts; a request is allowed when a bound rule matches its verb, API group,
// resource[/subresource] and (when the rule names any) its name. The files' ServiceAccount
// documents go to the store (Pod admission looks them up).
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "http/RequestInfo.h"

namespace apiserver {

struct Rule {
  std::vector<std::string> verbs, groups, resources, names;
};
struct Binding {
  std::string ns;  // "" for ClusterRoleBinding
  std::string role_kind, role_name;
  std::vector<std::pair<std::string, std::string>> subjects;  // kind, full name
};

class RbacPolicy {
 public:
  // Multi-document YAML; kinds other than Role, ClusterRole, RoleBinding, ClusterRoleBinding and
  // ServiceAccount are ignored. ServiceAccounts are added to `service_accounts` as (ns, name).
  bool load_file(const std::string& file,
                 std::set<std::pair<std::string, std::string>>& service_accounts, std::string& err);
  bool allows(const RequestInfo& info) const;

 private:
  std::map<std::string, std::vector<Rule>> roles_;  // "ns/name", cluster roles "/name"
  std::vector<Binding> bindings_;
};

}  // namespace apiserver

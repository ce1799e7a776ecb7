// RBAC rules and bindings (see RbacPolicy.h).
#include "auth/RbacPolicy.h"

#include <algorithm>

#include <yaml-cpp/yaml.h>

namespace apiserver {

namespace {

std::vector<std::string> yaml_strings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n && n.IsSequence())
    for (auto it = n.begin(); it != n.end(); ++it)
      out.push_back(it->as<std::string>(""));
  return out;
}

}  // namespace

bool RbacPolicy::load_file(const std::string& file,
                           std::set<std::pair<std::string, std::string>>& service_accounts,
                           std::string& err) {
  try {
    for (auto& doc : YAML::LoadAllFromFile(file)) {
      if (!doc.IsMap()) continue;
      std::string kind = doc["kind"].as<std::string>("");
      std::string name = doc["metadata"]["name"].as<std::string>("");
      std::string ns = doc["metadata"]["namespace"].as<std::string>("default");
      if (kind == "ServiceAccount") {
        service_accounts.insert({ns, name});
      } else if (kind == "Role" || kind == "ClusterRole") {
        std::vector<Rule> rules;
        if (doc["rules"] && doc["rules"].IsSequence())
          for (auto it = doc["rules"].begin(); it != doc["rules"].end(); ++it) {
            Rule r;
            r.verbs = yaml_strings((*it)["verbs"]);
            r.groups = yaml_strings((*it)["apiGroups"]);
            r.resources = yaml_strings((*it)["resources"]);
            r.names = yaml_strings((*it)["resourceNames"]);
            rules.push_back(r);
          }
        roles_[(kind == "Role" ? ns : "") + "/" + name] = rules;
      } else if (kind == "RoleBinding" || kind == "ClusterRoleBinding") {
        Binding b;
        b.ns = kind == "RoleBinding" ? ns : "";
        b.role_kind = doc["roleRef"]["kind"].as<std::string>("Role");
        b.role_name = doc["roleRef"]["name"].as<std::string>("");
        if (doc["subjects"] && doc["subjects"].IsSequence())
          for (auto it = doc["subjects"].begin(); it != doc["subjects"].end(); ++it) {
            std::string sk = (*it)["kind"].as<std::string>("");
            std::string sn = (*it)["name"].as<std::string>("");
            if (sk == "ServiceAccount")
              sn = "system:serviceaccount:" + (*it)["namespace"].as<std::string>(ns) + ":" + sn;
            b.subjects.push_back({sk, sn});
          }
        bindings_.push_back(b);
      }
    }
  } catch (const std::exception& e) {
    err = file + ": " + e.what();
    return false;
  }
  return true;
}

bool RbacPolicy::allows(const RequestInfo& info) const {
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), "*") != v.end() ||
           std::find(v.begin(), v.end(), x) != v.end();
  };
  std::string res = info.resource + (info.subresource.empty() ? "" : "/" + info.subresource);
  for (auto& b : bindings_) {
    if (!b.ns.empty() && b.ns != info.ns) continue;
    bool subject = false;
    for (auto& [kind, name] : b.subjects) {
      if ((kind == "User" || kind == "ServiceAccount") && name == info.user) subject = true;
      if (kind == "Group" &&
          std::find(info.groups.begin(), info.groups.end(), name) != info.groups.end())
        subject = true;
    }
    if (!subject) continue;
    std::string rk = b.role_kind == "ClusterRole" ? "/" + b.role_name : b.ns + "/" + b.role_name;
    auto rit = roles_.find(rk);
    if (rit == roles_.end()) continue;
    for (auto& r : rit->second) {
      if (!has(r.verbs, info.verb) || !has(r.groups, info.group) || !has(r.resources, res))
        continue;
      if (!r.names.empty() && (info.name.empty() || std::find(r.names.begin(), r.names.end(),
                                                              info.name) == r.names.end()))
        continue;
      return true;
    }
  }
  return false;
}

}  // namespace apiserver

// managedFields bookkeeping (see ManagedFields.h).
#include "store/ManagedFields.h"

#include <algorithm>

#include "gocompat/GoTime.h"

namespace apiserver {

void meta_leaves(const J& meta, Leaves& out) {
  if (!meta.is_object()) return;
  for (const char* m : {"labels", "annotations"}) {
    if (!meta.contains(m) || !meta[m].is_object() || meta[m].empty()) continue;
    out[{"f:metadata", std::string("f:") + m, "."}] = true;
    for (auto& [k, v] : meta[m].items())
      out[{"f:metadata", std::string("f:") + m, "f:" + k}] = v;
  }
}

bool empty_value(const J& v) {
  return v.is_null() || (v.is_string() && v.get<std::string>().empty()) ||
         (v.is_number() && v == 0) || (v.is_object() && v.empty()) || (v.is_array() && v.empty()) ||
         (v.is_boolean() && !v.get<bool>());
}

Leaves lease_leaves(const J& o) {
  Leaves l;
  meta_leaves(o.value("metadata", obj()), l);
  if (o.contains("spec") && o["spec"].is_object())
    for (auto& [k, v] : o["spec"].items())
      l[{"f:spec", "f:" + k}] = v;
  return l;
}

Leaves event_leaves(const J& versioned) {
  Leaves l;
  meta_leaves(versioned.value("metadata", obj()), l);
  for (auto& [k, v] : versioned.items()) {
    if (k == "kind" || k == "apiVersion" || k == "metadata" || empty_value(v)) continue;
    if (v.is_object() && k != "involvedObject" && k != "regarding" && k != "related") {
      for (auto& [k2, v2] : v.items())
        if (!empty_value(v2)) l[{"f:" + k, "f:" + k2}] = v2;
    } else {
      l[{"f:" + k}] = v;
    }
  }
  return l;
}

void apply_ownership(std::vector<Managed>& managed, const Leaves& old_l, const Leaves& new_l,
                     const std::string& manager, const std::string& api_version) {
  std::set<Path> changed;
  for (auto& [p, v] : new_l) {
    auto it = old_l.find(p);
    if (it == old_l.end() || it->second != v) changed.insert(p);
  }
  bool found = false;
  for (auto& m : managed) {
    std::set<Path> keep;
    for (auto& p : m.fields)
      if (new_l.count(p) && (m.manager == manager || !changed.count(p))) keep.insert(p);
    if (m.manager == manager) {
      found = true;
      keep.insert(changed.begin(), changed.end());
      if (keep != m.fields || !changed.empty()) {
        m.time = rfc3339_now();
        m.api_version = api_version;
      }
    }
    m.fields = std::move(keep);
  }
  if (!found && !changed.empty()) managed.push_back({manager, api_version, rfc3339_now(), changed});
  managed.erase(std::remove_if(managed.begin(), managed.end(),
                               [](const Managed& m) { return m.fields.empty(); }),
                managed.end());
}

J render_managed(const std::vector<Managed>& managed) {
  J arr = J::array();
  for (auto& m : managed) {
    nlohmann::json root = nlohmann::json::object();
    for (auto& p : m.fields) {
      nlohmann::json* node = &root;
      for (auto& seg : p) {
        if (!node->is_object()) *node = nlohmann::json::object();
        node = &(*node)[seg];
      }
      if (!node->is_object()) *node = nlohmann::json::object();
    }
    J e = obj();
    e["manager"] = m.manager;
    e["operation"] = "Update";
    e["apiVersion"] = m.api_version;
    e["time"] = m.time;
    e["fieldsType"] = "FieldsV1";
    e["fieldsV1"] = J::parse(root.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    arr.push_back(e);
  }
  return arr;
}

}  // namespace apiserver

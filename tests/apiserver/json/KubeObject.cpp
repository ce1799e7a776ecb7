// Shared object JSON helpers (see KubeObject.h).
#include "json/KubeObject.h"

namespace apiserver {

J canonical_meta(const J& m) {
  return reorder(
      m,
      {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
       "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
       "annotations", "ownerReferences", "finalizers", "managedFields"},
      false);
}

J with_kind(const J& o, const std::string& kind, const std::string& api_version) {
  J out = obj();
  out["kind"] = kind;
  out["apiVersion"] = api_version;
  for (auto& [k, v] : o.items())
    if (k != "kind" && k != "apiVersion") out[k] = v;
  return out;
}

std::string meta_str(const J& o, const char* key) {
  if (!o.is_object() || !o.contains("metadata")) return "";
  const J& m = o["metadata"];
  if (!m.is_object() || !m.contains(key) || !m[key].is_string()) return "";
  return m[key].get<std::string>();
}

}  // namespace apiserver

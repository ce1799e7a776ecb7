// Go-typed body decoding (see ObjectDecoding.h).
#include "handlers/ObjectDecoding.h"

#include <cstdint>

#include "gocompat/GoTime.h"

namespace apiserver {

const char* go_json_type(const J& v) {
  if (v.is_string()) return "string";
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "bool";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "null";
}

std::string unmarshal_err(const J& v, const std::string& field, const std::string& type) {
  std::string t = go_json_type(v);
  if (v.is_number() && (type == "int32" || type == "int64")) t = "number " + dumps(v);
  return "json: cannot unmarshal " + t + " into Go struct field " + field + " of type " + type;
}

// Decodes metadata with Go's type rules. Returns "" or the error text.
std::string decode_meta(const J& in, const std::string& kind, J& out) {
  out = obj();
  if (in.is_null()) return "";
  if (!in.is_object()) return unmarshal_err(in, kind + ".metadata", "v1.ObjectMeta");
  for (const char* k : {"name", "generateName", "namespace", "uid", "resourceVersion"}) {
    if (!in.contains(k) || in[k].is_null()) continue;
    if (!in[k].is_string())
      return unmarshal_err(in[k], std::string("ObjectMeta.metadata.") + k, "string");
    if (!in[k].get<std::string>().empty()) out[k] = in[k];
  }
  for (const char* k : {"labels", "annotations"}) {
    if (!in.contains(k) || in[k].is_null()) continue;
    if (!in[k].is_object())
      return unmarshal_err(in[k], std::string("ObjectMeta.metadata.") + k, "map[string]string");
    J m = obj();
    for (auto& [lk, lv] : in[k].items()) {
      if (lv.is_null()) {
        m[lk] = "";
        continue;
      }
      if (!lv.is_string())
        return unmarshal_err(lv, std::string("ObjectMeta.metadata.") + k, "string");
      m[lk] = lv;
    }
    if (!m.empty()) out[k] = m;
  }
  if (in.contains("ownerReferences") && in["ownerReferences"].is_array() &&
      !in["ownerReferences"].empty())
    out["ownerReferences"] = in["ownerReferences"];
  if (in.contains("finalizers") && in["finalizers"].is_array() && !in["finalizers"].empty())
    out["finalizers"] = in["finalizers"];
  return "";
}

std::string decode_int32(const J& v, const std::string& field, J& out) {
  if (v.is_null()) return "";
  if (!v.is_number_integer()) return unmarshal_err(v, field, "int32");
  int64_t x = v.is_number_unsigned()
                  ? (v.get<uint64_t>() > INT32_MAX ? int64_t{INT32_MAX} + 1 : v.get<int64_t>())
                  : v.get<int64_t>();
  if (x > INT32_MAX || x < INT32_MIN) return unmarshal_err(v, field, "int32");
  out = x;
  return "";
}

std::string decode_micro(const J& v, J& out) {
  if (v.is_null()) return "";
  if (!v.is_string())
    return "json: cannot unmarshal " + std::string(go_json_type(v)) +
           " into Go value of type string";
  GoTime t = go_parse_time(v.get<std::string>(), true);
  if (!t.ok) return t.err;
  out = format_micro(t.unix_s, t.nanos);
  return "";
}

std::string decode_time(const J& v, J& out) {
  if (v.is_null()) return "";
  if (!v.is_string())
    return "json: cannot unmarshal " + std::string(go_json_type(v)) +
           " into Go value of type string";
  if (v.get<std::string>().empty()) return "";
  GoTime t = go_parse_time(v.get<std::string>(), false);
  if (!t.ok) return t.err;
  out = format_rfc3339(t.unix_s);
  return "";
}

}  // namespace apiserver

#include "kube/JsonFields.h"

namespace leasehold::kube::json_fields {

using nlohmann::json;

const json* member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

bool readString(const json& obj, const char* key, const std::string& path, std::string& out,
                std::string& error) {
  const json* v = member(obj, key);
  if (!v) return true;
  if (!v->is_string()) {
    error = path + key + ": expected a string";
    return false;
  }
  out = v->get<std::string>();
  return true;
}

bool readBool(const json& obj, const char* key, const std::string& path, bool& out,
              std::string& error) {
  const json* v = member(obj, key);
  if (!v) return true;
  if (!v->is_boolean()) {
    error = path + key + ": expected a boolean";
    return false;
  }
  out = v->get<bool>();
  return true;
}

bool readObject(const json& obj, const char* key, const std::string& path, const json*& out,
                std::string& error) {
  out = member(obj, key);
  if (out && !out->is_object()) {
    error = path + key + ": expected an object";
    return false;
  }
  return true;
}

}  // namespace leasehold::kube::json_fields

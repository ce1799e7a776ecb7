#pragma once
// Reading the members of the API server's JSON objects, for the codecs of Leases and Pods: a
// member that is missing or null is absent; one of the wrong type is an error whose message
// names its path ("spec.holderIdentity: expected a string"). Nothing here throws.
#include <nlohmann/json.hpp>

#include <string>

namespace leasehold::kube::json_fields {

// The member, or nullptr when obj is no object or the member is missing or null.
const nlohmann::json* member(const nlohmann::json& obj, const char* key);
// Each leaves out unchanged when the member is absent; false with `error` on a wrong type.
bool readString(const nlohmann::json& obj, const char* key, const std::string& path,
                std::string& out, std::string& error);
bool readBool(const nlohmann::json& obj, const char* key, const std::string& path, bool& out,
              std::string& error);
// out = the member if it is an object, nullptr if absent.
bool readObject(const nlohmann::json& obj, const char* key, const std::string& path,
                const nlohmann::json*& out, std::string& error);

}  // namespace leasehold::kube::json_fields

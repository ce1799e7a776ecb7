// The parts of a Kubernetes object's JSON every resource shares: metadata in the real server's
// field order, kind/apiVersion first, metadata strings.
#pragma once

#include <string>

#include "json/Json.h"

namespace apiserver {

J canonical_meta(const J& m);  // ObjectMeta fields in Go's struct order; others dropped
// `o` with kind and apiVersion first (the stored objects have neither).
J with_kind(const J& o, const std::string& kind, const std::string& api_version);
std::string meta_str(const J& o, const char* key);  // metadata.<key> when a string, else ""

}  // namespace apiserver

// Request bodies to JSON: JSON, or YAML for application/yaml (and seed files), bounded in nesting
// and size, with the parse error texts the real server answers in its 400s.
#pragma once

#include <cstddef>
#include <string>

#include <yaml-cpp/yaml.h>

#include "json/Json.h"

namespace apiserver {

constexpr size_t kMaxDepth = 100;  // JSON nesting accepted in request bodies

J yaml_to_json(const YAML::Node& n, int depth = 0);

// Parses a request body (JSON, or YAML for application/yaml). On failure returns the Go-style
// parse error text.
bool parse_json_body(const std::string& body, bool yaml, J& out, std::string& err);

}  // namespace apiserver

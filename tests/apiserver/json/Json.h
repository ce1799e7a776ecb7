// The JSON type of the stand-in server (insertion-ordered, so that objects keep the field order
// of the real server's answers) and the small helpers every part of it uses.
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

namespace apiserver {

using J = nlohmann::ordered_json;

// Nesting depth of a JSON text (strings skipped); guards the recursive parser.
size_t json_depth(std::string_view s);

}  // namespace apiserver

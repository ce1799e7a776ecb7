// The JSON type of the stand-in server (insertion-ordered, so that objects keep the field order
// of the real server's answers) and the small helpers every part of it uses.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace apiserver {

using J = nlohmann::ordered_json;

// Compact text with invalid UTF-8 replaced (never throws), as every answer is written.
std::string dumps(const J& j);

J obj();  // an empty object

// `in` with the keys in `order` first (those present), then the rest when keep_rest.
J reorder(const J& in, std::initializer_list<const char*> order, bool keep_rest);

// Nesting depth of a JSON text (strings skipped); guards the recursive parser.
size_t json_depth(std::string_view s);

}  // namespace apiserver

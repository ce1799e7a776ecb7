// JSON helpers of the stand-in server (see Json.h).
#include "json/Json.h"

#include <algorithm>

namespace apiserver {

std::string dumps(const J& j) {
  return j.dump(-1, ' ', false, J::error_handler_t::replace);
}

J obj() {
  return J::object();
}

J reorder(const J& in, std::initializer_list<const char*> order, bool keep_rest) {
  if (!in.is_object()) return in;
  J out = obj();
  for (const char* k : order)
    if (in.contains(k)) out[k] = in.at(k);
  if (keep_rest)
    for (auto& [k, v] : in.items())
      if (!out.contains(k)) out[k] = v;
  return out;
}

size_t json_depth(std::string_view s) {
  size_t depth = 0, max_depth = 0;
  bool in_str = false, esc = false;
  for (char c : s) {
    if (in_str) {
      if (esc)
        esc = false;
      else if (c == '\\')
        esc = true;
      else if (c == '"')
        in_str = false;
      continue;
    }
    if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

}  // namespace apiserver

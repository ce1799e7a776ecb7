// Request body parsing (see BodyParser.h).
#include "json/BodyParser.h"

#include <stdexcept>

namespace apiserver {

J yaml_to_json(const YAML::Node& n, int depth) {
  if (depth > 64) throw std::runtime_error("YAML nested too deeply");
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      J o = obj();
      for (auto it = n.begin(); it != n.end(); ++it)
        o[it->first.as<std::string>()] = yaml_to_json(it->second, depth + 1);
      return o;
    }
    case YAML::NodeType::Sequence: {
      J a = J::array();
      for (auto it = n.begin(); it != n.end(); ++it)
        a.push_back(yaml_to_json(*it, depth + 1));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted
      if (s == "null" || s == "~" || s.empty()) return nullptr;
      if (s == "true" || s == "True") return true;
      if (s == "false" || s == "False") return false;
      try {
        size_t pos = 0;
        long long v = std::stoll(s, &pos);
        if (pos == s.size()) return v;
        double d = std::stod(s, &pos);
        if (pos == s.size()) return d;
      } catch (...) {
      }
      return s;
    }
    default:
      return nullptr;
  }
}

bool parse_json_body(const std::string& body, bool yaml, J& out, std::string& err) {
  if (json_depth(body) > kMaxDepth) {
    err = "exceeded max depth";
    return false;
  }
  try {
    out = J::parse(body);
    return true;
  } catch (const J::parse_error& e) {
    if (e.byte >= body.size() || body.find_first_not_of(" \t\r\n") == std::string::npos) {
      err = "unexpected end of JSON input";
    } else {
      size_t i = e.byte > 0 ? e.byte - 1 : 0;
      err = std::string("invalid character ") + "'" + body[i] + "'" +
            " looking for beginning of value";
    }
  }
  size_t indicators = 0;
  for (char ch : body)
    if (ch == '-' || ch == '[' || ch == '{' || ch == ':' || ch == '?' || ch == '&' || ch == '*')
      ++indicators;
  if (yaml && body.size() <= (64u << 10) && indicators <= 400) {
    try {
      out = yaml_to_json(YAML::Load(body));
      return true;
    } catch (const std::exception& e) {
      err = std::string("yaml: ") + e.what();
    }
  }
  return false;
}

}  // namespace apiserver

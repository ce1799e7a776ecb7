// Content negotiation (see MediaTypes.h).
#include "http/MediaTypes.h"

#include <cctype>
#include <map>
#include <sstream>
#include <vector>

namespace apiserver {

std::string media_type(const std::string& ct) {
  std::string t = ct.substr(0, ct.find(';'));
  std::string out;
  for (char c : t)
    if (c != ' ' && c != '\t')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

AcceptInfo parse_accept(const std::string& accept) {
  AcceptInfo a;
  if (accept.empty()) {
    a.json = true;
    return a;
  }
  std::stringstream ss(accept);
  std::string range;
  while (std::getline(ss, range, ',')) {
    std::vector<std::string> parts;
    std::stringstream rs(range);
    std::string p;
    while (std::getline(rs, p, ';')) {
      std::string t;
      for (char c : p)
        if (c != ' ' && c != '\t') t += c;
      parts.push_back(t);
    }
    if (parts.empty()) continue;
    std::string type = parts[0];
    for (auto& c : type)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::map<std::string, std::string> params;
    for (size_t i = 1; i < parts.size(); ++i) {
      auto eq = parts[i].find('=');
      if (eq != std::string::npos) params[parts[i].substr(0, eq)] = parts[i].substr(eq + 1);
    }
    bool json_like = type == "application/json" || type == "*/*" || type == "application/*";
    if (!json_like) continue;
    if (params.count("as")) {
      if (params["as"] == "Table" && params["g"] == "meta.k8s.io" &&
          (params["v"] == "v1" || params["v"] == "v1beta1") && a.table_version.empty())
        a.table_version = params["v"];
      continue;
    }
    a.json = true;
  }
  return a;
}

}  // namespace apiserver

// RequestInfo of a request (see RequestInfo.h).
#include "http/RequestInfo.h"

#include <sstream>
#include <string_view>

#include "http/QueryString.h"
#include "store/Selector.h"

namespace apiserver {

RequestInfo resolve_request_info(const HttpRequest& req) {
  RequestInfo info;
  std::string target = req.target;
  auto qpos = target.find('?');
  info.path = target.substr(0, qpos);
  if (qpos != std::string::npos)
    info.query = parse_query(std::string_view(target).substr(qpos + 1));

  // request info
  std::vector<std::string> seg;
  {
    std::stringstream ss(info.path);
    std::string s;
    while (std::getline(ss, s, '/'))
      if (!s.empty()) seg.push_back(url_decode(s, false));
  }
  size_t i = 0;
  if (seg.size() >= 2 && seg[0] == "api") {
    info.version = seg[1];
    i = 2;
  } else if (seg.size() >= 3 && seg[0] == "apis") {
    info.group = seg[1];
    info.version = seg[2];
    i = 3;
  } else {
    return info;
  }
  if (i >= seg.size()) return info;
  info.resource_request = true;
  bool watch_prefix = false;
  if (seg[i] == "watch") {
    watch_prefix = true;
    ++i;
  }
  if (i < seg.size() && seg[i] == "namespaces" && i + 1 < seg.size() && i + 2 < seg.size()) {
    info.ns = seg[i + 1];
    i += 2;
  }
  if (i < seg.size()) info.resource = seg[i++];
  if (i < seg.size()) info.name = seg[i++];
  if (i < seg.size()) info.subresource = seg[i++];
  if (info.resource == "namespaces" && info.ns.empty() && !info.name.empty()) info.ns = info.name;

  const std::string& m = req.method;
  auto q = [&](const char* k) {
    auto it = info.query.find(k);
    return it == info.query.end() ? std::string() : it->second;
  };
  std::string w = q("watch");
  bool watch = watch_prefix || w == "true" || w == "1";
  if (m == "GET" || m == "HEAD") {
    info.verb = info.name.empty() ? (watch ? "watch" : "list") : (watch ? "watch" : "get");
  } else if (m == "POST") {
    info.verb = "create";
  } else if (m == "PUT") {
    info.verb = "update";
  } else if (m == "PATCH") {
    info.verb = "patch";
  } else if (m == "DELETE") {
    info.verb = info.name.empty() ? "deletecollection" : "delete";
  } else {
    info.verb = m;
  }
  if ((info.verb == "list" || info.verb == "watch") && info.name.empty()) {
    Selector fs;
    std::string err;
    if (parse_selector(q("fieldSelector"), false, fs, err))
      for (auto& t : fs.terms)
        if (t.key == "metadata.name" && t.op == Selector::Term::kEq && fs.terms.size() >= 1) {
          bool only_eq = true;
          for (auto& t2 : fs.terms)
            if (t2.key == "metadata.name" && (t2.op != Selector::Term::kEq || t2.value != t.value))
              only_eq = false;
          if (only_eq && t.value.find('/') == std::string::npos) info.name = t.value;
        }
  }
  return info;
}

std::string client_of(const RequestInfo& info) {
  if (info.bad_token) return "<invalid-token>";
  return info.user;
}

}  // namespace apiserver

// A parsed HTTP request and the answer to it, free of any networking: the server side turns
// Beast messages into these and back, so the Kubernetes semantics never see Beast.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace apiserver {

struct HttpRequest {
  std::string method;
  std::string target;                                        // path?query as received
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-case
  std::string body;
  std::string local_address;                         // host:port of the listening socket (for /api)
  std::string header(std::string_view name) const {  // "" when absent
    for (auto& [k, v] : headers)
      if (k == name) return v;
    return "";
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

}  // namespace apiserver

// Handler context (see HandlerContext.h).
#include "handlers/HandlerContext.h"

namespace apiserver {

std::string manager_of(const HttpRequest& req, const RequestInfo& info) {
  auto it = info.query.find("fieldManager");
  if (it != info.query.end() && !it->second.empty()) return it->second;
  std::string ua = req.header("user-agent");
  std::string m = ua.substr(0, ua.find('/'));
  if (m.size() > 128) m.resize(128);
  return m.empty() ? "unknown" : m;
}

}  // namespace apiserver

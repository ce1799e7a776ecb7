// HTTP/1.1 wire format (see HttpWire.h).
#include "server/HttpWire.h"

#include <cctype>
#include <cstdio>
#include <ctime>

namespace apiserver {

namespace http = boost::beast::http;

std::string http_date() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

std::string chunk(std::string_view data) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%zx\r\n", data.size());
  return std::string(buf) + std::string(data) + "\r\n";
}

std::string serialize(const HttpResponse& r, bool keep_alive, bool head) {
  std::string s = "HTTP/1.1 " + std::to_string(r.status) + " " +
                  std::string(http::obsolete_reason(static_cast<http::status>(r.status))) + "\r\n";
  s += "Audit-Id: " + std::string("00000000-0000-4000-8000-000000000000") + "\r\n";
  s += "Cache-Control: no-cache, private\r\n";
  if (!r.content_type.empty()) s += "Content-Type: " + r.content_type + "\r\n";
  for (auto& [k, v] : r.headers)
    s += k + ": " + v + "\r\n";
  s += "Date: " + http_date() + "\r\n";
  if (!keep_alive) s += "Connection: close\r\n";
  if (r.body.size() < 2048) {
    s += "Content-Length: " + std::to_string(r.body.size()) + "\r\n\r\n";
    if (!head) s += r.body;
  } else {
    s += "Transfer-Encoding: chunked\r\n\r\n";
    if (!head) s += chunk(r.body) + "0\r\n\r\n";
  }
  return s;
}

HttpRequest convert(const http::request<http::string_body>& m, const std::string& local) {
  HttpRequest r;
  r.method = std::string(m.method_string());
  r.target = std::string(m.target());
  for (auto& f : m) {
    std::string name(f.name_string());
    for (auto& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers.emplace_back(name, std::string(f.value()));
  }
  r.body = m.body();
  r.local_address = local;
  return r;
}

}  // namespace apiserver

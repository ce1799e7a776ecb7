// The control API (see ControlApi.h).
#include "server/ControlApi.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/beast/http.hpp>

#include "http/QueryString.h"
#include "http/StatusResponses.h"
#include "json/Json.h"
#include "server/HttpWire.h"

namespace apiserver {

namespace http = beast::http;
using namespace std::chrono_literals;

HttpResponse control(ServerState& S, const HttpRequest& req) {
  std::string path = req.target.substr(0, req.target.find('?'));
  auto q = parse_query(req.target.find('?') == std::string::npos
                           ? std::string_view()
                           : std::string_view(req.target).substr(req.target.find('?') + 1));
  auto qv = [&](const char* k, const std::string& d = "") {
    auto it = q.find(k);
    return it == q.end() ? d : it->second;
  };
  const std::string& m = req.method;
  J body = json_depth(req.body) > 64 ? J(nullptr)
                                     : J::parse(req.body.empty() ? "{}" : req.body, nullptr, false);
  if (path == "/healthz") return json_resp(200, J{{"ok", true}});
  if (path == "/counters") {
    if (m == "DELETE" || m == "POST") {
      S.counters.clear();
      S.counters_by_resource.clear();
      return json_resp(200, J{{"reset", true}});
    }
    J out = J::object();
    for (auto& [c, vs] : qv("by") == "resource" ? S.counters_by_resource : S.counters)
      for (auto& [v, n] : vs)
        out[c][v] = n;
    return json_resp(200, out);
  }
  if (path == "/counters/reset") {
    S.counters.clear();
    S.counters_by_resource.clear();
    return json_resp(200, J{{"reset", true}});
  }
  if (path == "/faults" || path.rfind("/faults/", 0) == 0) {
    if (m == "GET") return json_resp(200, S.faults.to_json());
    if (m == "DELETE") {
      if (path == "/faults") {
        S.faults.clear();
      } else {
        S.faults.remove(std::atoi(path.substr(8).c_str()));
      }
      return json_resp(200, J{{"ok", true}});
    }
    if (m == "POST") {
      FaultRule f;
      if (auto err = FaultRule::from_json(body, f)) return json_resp(400, J{{"error", *err}});
      return json_resp(200, S.faults.add(f).to_json());
    }
  }
  if (path == "/latency") {
    if (m == "GET") return json_resp(200, J{{"ms", S.global_latency_ms}});
    S.global_latency_ms =
        std::max(0, std::atoi(qv("ms", std::to_string(body.value("ms", 0))).c_str()));
    return json_resp(200, J{{"ms", S.global_latency_ms}});
  }
  if (path == "/partition") {
    std::string client = qv("client", body.is_object() ? body.value("client", std::string()) : "");
    if (m == "GET") {
      J arr = J::array();
      for (auto& c : S.partitioned)
        arr.push_back(c);
      return json_resp(200, arr);
    }
    if (client.empty()) return json_resp(400, J{{"error", "client= is required"}});
    if (m == "POST" || m == "PUT") {
      S.partitioned.insert(client);
    } else if (m == "DELETE") {
      S.partitioned.erase(client);
      // Requests hung by the partition and frozen watches are closed: the client reconnects.
      S.each_conn([&](Connection& c) {
        if (c.client == client && (c.hung || c.watching) && c.close) c.close();
      });
    }
    return json_resp(200, J{{"partitioned", S.partitioned.count(client) > 0}, {"client", client}});
  }
  if (path == "/watches") {
    size_t n = 0;
    J by = J::object();
    S.each_conn([&](Connection& c) {
      if (c.watching) {
        ++n;
        by[c.client] = by.value(c.client, 0) + 1;
      }
    });
    return json_resp(200, J{{"open", n}, {"byClient", by}});
  }
  if (path == "/watches/cut") {
    std::string client = qv("client");
    bool clean = qv("clean") == "1" || qv("clean") == "true";
    size_t n = 0;
    S.each_conn([&](Connection& c) {
      if (c.watching && (client.empty() || c.client == client)) {
        c.cut = true;
        c.cut_clean = clean;
        if (c.wake) c.wake();
        ++n;
      }
    });
    return json_resp(200, J{{"cut", n}});
  }
  if (path == "/tokens/reload") {
    S.api.maybe_reload_tokens(true);
    return json_resp(200, J{{"ok", true}});
  }
  if (path == "/state")
    return json_resp(200, J{{"resourceVersion", std::to_string(S.api.current_rv())}});
  if (path.rfind("/leases/", 0) == 0) {
    std::string rest = path.substr(8);
    auto slash = rest.find('/');
    if (slash == std::string::npos) return json_resp(404, J{{"error", "use /leases/NS/NAME"}});
    std::string ns = url_decode(rest.substr(0, slash), false);
    std::string name = url_decode(rest.substr(slash + 1), false);
    if (m == "GET") {
      auto o = S.api.raw_get("leases", ns, name);
      if (!o) return json_resp(404, J{{"error", "not found"}});
      return json_resp(200, *o);
    }
    if (m == "PUT" || m == "POST") {
      if (!body.is_object())
        return json_resp(400, J{{"error", "body must be a Lease JSON object"}});
      try {
        return json_resp(200, S.api.raw_put_lease(ns, name, body));
      } catch (const std::exception& e) {
        return json_resp(400, J{{"error", e.what()}});
      }
    }
    if (m == "DELETE") {
      bool ok = S.api.raw_delete("leases", ns, name);
      return json_resp(ok ? 200 : 404, J{{"deleted", ok}});
    }
  }
  return json_resp(404, J{{"error", "unknown control endpoint " + path}});
}

net::awaitable<void> control_session(beast::tcp_stream stream, ServerState& S) {
  beast::flat_buffer buf;
  beast::error_code ec;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(kMaxBody);
    stream.expires_after(300s);
    co_await http::async_read(stream, buf, parser, net::redirect_error(net::use_awaitable, ec));
    if (ec) break;
    auto& msg = parser.get();
    bool keep_alive = msg.keep_alive();
    HttpResponse r;
    try {
      r = control(S, convert(msg, ""));
    } catch (const std::exception& e) {
      r = json_resp(500, J{{"error", e.what()}});
    }
    co_await write_all(stream, serialize(r, keep_alive, false), ec);
    if (ec || !keep_alive) break;
  }
  close_stream(stream);
}

}  // namespace apiserver

// leasehold-test-apiserver: a stand-in kube-apiserver for tests (see README.md beside this file).
// All networking lives here: one io_context thread, one coroutine per connection.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <random>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "Api.h"
#include "http/QueryString.h"
#include "http/StatusResponses.h"
#include "json/Json.h"

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using apiserver::J;
using namespace std::chrono_literals;

namespace {

constexpr size_t kMaxBody = 4u << 20;
constexpr size_t kMaxHeader = 64u << 10;

struct Fault {
  int id = 0;
  std::string action;  // latency error 429 malformed drop drop-after hang
  std::string client = "*", user_agent, verb = "*", resource = "*", name = "*";
  int status = 503;
  int ms = 0;
  int retry_after = 1;
  int64_t count = -1;
  double probability = 1.0;
  J to_json() const {
    return J{{"id", id},         {"action", action},
             {"client", client}, {"userAgent", user_agent},
             {"verb", verb},     {"resource", resource},
             {"name", name},     {"status", status},
             {"ms", ms},         {"retryAfter", retry_after},
             {"count", count},   {"probability", probability}};
  }
};

struct Conn {
  std::string client;
  bool watching = false;
  bool hung = false;
  bool cut = false;
  bool cut_clean = false;
  std::function<void()> close;  // closes the socket
  std::function<void()> wake;   // wakes a watch loop
};

struct State {
  apiserver::Api api;
  std::map<std::string, std::map<std::string, uint64_t>> counters, counters_by_resource;
  std::vector<Fault> faults;
  int next_fault = 1;
  int global_latency_ms = 0;
  std::set<std::string> partitioned;
  std::vector<std::weak_ptr<Conn>> conns;
  std::mt19937_64 rng{std::random_device{}()};

  void each_conn(const std::function<void(Conn&)>& f) {
    for (auto it = conns.begin(); it != conns.end();) {
      if (auto c = it->lock()) {
        f(*c);
        ++it;
      } else {
        it = conns.erase(it);
      }
    }
  }
};

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

std::string serialize(const apiserver::HttpResponse& r, bool keep_alive, bool head) {
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

apiserver::HttpRequest convert(const http::request<http::string_body>& m,
                               const std::string& local) {
  apiserver::HttpRequest r;
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

bool glob_eq(const std::string& pattern, const std::string& v) {
  return pattern.empty() || pattern == "*" || pattern == v;
}

template <class Stream>
auto& lowest(Stream& s) {
  return beast::get_lowest_layer(s);
}

// ----------------------------------------------------------------------------------- API session
template <class Stream>
net::awaitable<void> write_all(Stream& stream, const std::string& data, beast::error_code& ec) {
  lowest(stream).expires_after(30s);
  co_await net::async_write(stream, net::buffer(data), net::redirect_error(net::use_awaitable, ec));
  lowest(stream).expires_never();
}

template <class Stream>
net::awaitable<void> wait_until_closed(Stream& stream) {
  char buf[512];
  lowest(stream).expires_never();
  for (;;) {
    beast::error_code ec;
    co_await stream.async_read_some(net::buffer(buf), net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return;
  }
}

template <class Stream>
void close_stream(Stream& stream) {
  beast::error_code ec;
  lowest(stream).socket().shutdown(tcp::socket::shutdown_both, ec);
  lowest(stream).socket().close(ec);
}

// Streams a watch. Returns when the stream ended (the connection is then closed by the caller).
template <class Stream>
net::awaitable<void> stream_watch(Stream& stream, State& S, std::shared_ptr<Conn> conn,
                                  apiserver::WatchStart ws) {
  auto exec = co_await net::this_coro::executor;
  beast::error_code ec;
  std::string head =
      "HTTP/1.1 200 OK\r\nAudit-Id: 00000000-0000-4000-8000-000000000000\r\nCache-Control: "
      "no-cache, private\r\nContent-Type: application/json\r\nDate: " +
      http_date() + "\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
  if (!ws.initial.empty()) head += chunk(ws.initial);
  if (!ws.watcher) {
    head += "0\r\n\r\n";
    co_await write_all(stream, head, ec);
    co_return;
  }
  co_await write_all(stream, head, ec);
  if (ec) co_return;
  auto w = ws.watcher;
  auto timer = std::make_shared<net::steady_timer>(exec);
  std::weak_ptr<net::steady_timer> wt = timer;
  w->wake = [wt] {
    if (auto t = wt.lock()) t->cancel();
  };
  conn->watching = true;
  conn->wake = w->wake;
  // Detect the client going away while we only write.
  auto detector_done = std::make_shared<bool>(false);
  auto peer_closed = std::make_shared<bool>(false);
  net::co_spawn(
      exec,
      [&stream, detector_done, peer_closed, wt]() -> net::awaitable<void> {
        char buf[512];
        for (;;) {
          beast::error_code rec;
          co_await stream.async_read_some(net::buffer(buf),
                                          net::redirect_error(net::use_awaitable, rec));
          if (rec) break;
        }
        *peer_closed = true;
        *detector_done = true;
        if (auto t = wt.lock()) t->cancel();
      },
      net::detached);

  auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::seconds(ws.timeout_seconds);
  auto pre_timeout = deadline - 2s;
  bool pre_sent = !ws.bookmarks || pre_timeout <= start;
  auto periodic = start + 60s;
  bool clean_end = false;
  for (;;) {
    if (*peer_closed || w->overflow || conn->cut) {
      clean_end = conn->cut && conn->cut_clean;
      break;
    }
    bool frozen = S.partitioned.count(conn->client) > 0;
    auto now = std::chrono::steady_clock::now();
    if (!frozen) {
      if (!w->queue.empty()) {
        std::string data;
        for (auto& l : w->queue)
          data += l;
        w->queue.clear();
        w->queued_bytes = 0;
        co_await write_all(stream, chunk(data), ec);
        if (ec) break;
        continue;
      }
      if (now >= deadline) {
        clean_end = true;
        break;
      }
      if (ws.bookmarks && ((!pre_sent && now >= pre_timeout) || now >= periodic)) {
        if (now >= pre_timeout) pre_sent = true;
        if (now >= periodic) periodic = now + 60s;
        std::string line = S.api.bookmark_line(*w);
        if (!line.empty()) {
          co_await write_all(stream, chunk(line), ec);
          if (ec) break;
        }
        continue;
      }
    }
    auto next = deadline;
    if (ws.bookmarks) {
      if (!pre_sent && pre_timeout < next) next = pre_timeout;
      if (periodic < next) next = periodic;
    }
    if (frozen) next = now + 3600s;
    timer->expires_at(next);
    beast::error_code tec;
    co_await timer->async_wait(net::redirect_error(net::use_awaitable, tec));
  }
  w->wake = nullptr;
  conn->wake = nullptr;
  conn->watching = false;
  if (clean_end && !*peer_closed) co_await write_all(stream, std::string("0\r\n\r\n"), ec);
  close_stream(stream);
  while (!*detector_done) {
    timer->expires_after(50ms);
    beast::error_code tec;
    co_await timer->async_wait(net::redirect_error(net::use_awaitable, tec));
  }
}

const Fault* pick_fault(State& S, const apiserver::RequestInfo& info, const std::string& ua,
                        int& latency_ms) {
  latency_ms = S.global_latency_ms;
  const Fault* chosen = nullptr;
  std::string client = apiserver::client_of(info);
  for (auto it = S.faults.begin(); it != S.faults.end();) {
    Fault& f = *it;
    bool match = glob_eq(f.client, client) && glob_eq(f.verb, info.verb) &&
                 glob_eq(f.resource, info.resource) && glob_eq(f.name, info.name) &&
                 (f.user_agent.empty() || ua.rfind(f.user_agent, 0) == 0) &&
                 (info.resource_request || f.resource == "*");
    if (match && f.probability < 1.0) {
      std::uniform_real_distribution<double> d(0, 1);
      match = d(S.rng) < f.probability;
    }
    if (!match || (chosen && f.action != "latency")) {
      ++it;
      continue;
    }
    if (f.action == "latency")
      latency_ms += f.ms;
    else
      chosen = &f;
    if (f.count > 0 && --f.count == 0) {
      // keep a copy of the chosen one alive until used: store in static
      static Fault last;
      if (chosen == &f) {
        last = f;
        chosen = &last;
      }
      it = S.faults.erase(it);
      continue;
    }
    ++it;
  }
  return chosen;
}

apiserver::HttpResponse fault_response(const Fault& f) {
  apiserver::HttpResponse r;
  if (f.action == "429") {
    r.status = 429;
    r.content_type = "text/plain; charset=utf-8";
    r.body = "Too many requests, please try again later.\n";
    r.headers.push_back({"Retry-After", std::to_string(f.retry_after)});
    return r;
  }
  r.status = f.status;
  std::string reason = "InternalError", msg = "Internal error occurred: injected fault";
  J details = J{{"causes", J::array({J{{"message", "injected fault"}}})}};
  if (f.status == 503) {
    reason = "ServiceUnavailable";
    msg = "the server is currently unable to handle the request";
    details = J::object();
  } else if (f.status == 504) {
    reason = "Timeout";
    msg = "Timeout: request did not complete within requested timeout - context deadline exceeded";
    details = J::object();
  } else if (f.status == 429) {
    reason = "TooManyRequests";
    msg = "injected throttling";
  }
  if (f.retry_after > 0 && (f.status == 503 || f.status == 429 || f.status == 504)) {
    r.headers.push_back({"Retry-After", std::to_string(f.retry_after)});
    details["retryAfterSeconds"] = f.retry_after;
  }
  r.body = apiserver::status_json(f.status, reason, msg, &details);
  return r;
}

template <class Stream>
net::awaitable<void> api_session(Stream stream, State& S, bool tls) {
  auto exec = co_await net::this_coro::executor;
  beast::error_code ec;
  std::string local;
  {
    auto ep = lowest(stream).socket().local_endpoint(ec);
    local = ep.address().to_string() + ":" + std::to_string(ep.port());
    if (ep.address().is_v6())
      local = "[" + ep.address().to_string() + "]:" + std::to_string(ep.port());
  }
  if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
    lowest(stream).expires_after(10s);
    co_await stream.async_handshake(ssl::stream_base::server,
                                    net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return;
  }
  (void)tls;
  auto conn = std::make_shared<Conn>();
  conn->close = [&stream] { close_stream(stream); };
  S.conns.push_back(conn);
  beast::flat_buffer buf;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(kMaxBody);
    parser.header_limit(kMaxHeader);
    lowest(stream).expires_after(300s);
    co_await http::async_read(stream, buf, parser, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      if (ec == http::error::body_limit) {
        apiserver::HttpResponse r;
        r.status = 413;
        r.body = apiserver::status_json(413, "RequestEntityTooLarge",
                                        "Request entity too large: limit is 3145728", nullptr);
        co_await write_all(stream, serialize(r, false, false), ec);
      } else if (ec != http::error::end_of_stream && ec != net::error::eof &&
                 ec != net::error::operation_aborted && ec != beast::error::timeout &&
                 ec != net::ssl::error::stream_truncated && ec != net::error::connection_reset) {
        co_await write_all(stream,
                           std::string("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; "
                                       "charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"),
                           ec);
      }
      break;
    }
    lowest(stream).expires_never();
    auto& msg = parser.get();
    bool keep_alive = msg.keep_alive();
    bool head = msg.method() == http::verb::head;
    apiserver::HttpRequest req = convert(msg, local);
    apiserver::RequestInfo info = S.api.classify(req);
    std::string client = apiserver::client_of(info);
    conn->client = client;
    if (info.resource_request) {
      ++S.counters[client][info.verb];
      ++S.counters_by_resource[client][info.verb + ":" + info.resource];
    }
    if (S.partitioned.count(client)) {
      conn->hung = true;
      co_await wait_until_closed(stream);
      break;
    }
    int latency_ms = 0;
    Fault fault;
    bool has_fault = false;
    if (const Fault* f = pick_fault(S, info, req.header("user-agent"), latency_ms)) {
      fault = *f;
      has_fault = true;
    }
    if (latency_ms > 0) {
      net::steady_timer t(exec, std::chrono::milliseconds(latency_ms));
      co_await t.async_wait(net::redirect_error(net::use_awaitable, ec));
      if (S.partitioned.count(client)) {
        conn->hung = true;
        co_await wait_until_closed(stream);
        break;
      }
    }
    if (has_fault) {
      if (fault.action == "hang") {
        conn->hung = true;
        co_await wait_until_closed(stream);
        break;
      }
      if (fault.action == "drop") break;
      if (fault.action == "error" || fault.action == "429") {
        co_await write_all(stream, serialize(fault_response(fault), keep_alive, head), ec);
        if (ec || !keep_alive) break;
        continue;
      }
    }
    apiserver::Result res;
    try {
      res = S.api.handle(req, info);
    } catch (const std::exception& e) {
      res.response.status = 500;
      res.response.body = apiserver::status_json(
          500, "InternalError", std::string("Internal error occurred: ") + e.what(), nullptr);
    }
    if (has_fault && fault.action == "drop-after") break;
    if (res.watch) {
      if (has_fault && fault.action == "malformed") {
        res.watch->initial += "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Lea\n";
      }
      co_await stream_watch(stream, S, conn, std::move(*res.watch));
      break;
    }
    if (has_fault && fault.action == "malformed") {
      res.response.body = res.response.body.substr(0, res.response.body.size() / 2);
      if (res.response.body.empty()) res.response.body = "{";
    }
    co_await write_all(stream, serialize(res.response, keep_alive, head), ec);
    if (ec || !keep_alive) break;
  }
  conn->close = [] {};
  close_stream(stream);
}

// ----------------------------------------------------------------------------------- control
apiserver::HttpResponse jresp(int code, const J& j) {
  apiserver::HttpResponse r;
  r.status = code;
  r.body = apiserver::dumps(j) + "\n";
  return r;
}

apiserver::HttpResponse control(State& S, const apiserver::HttpRequest& req) {
  std::string path = req.target.substr(0, req.target.find('?'));
  auto q =
      apiserver::parse_query(req.target.find('?') == std::string::npos
                                 ? std::string_view()
                                 : std::string_view(req.target).substr(req.target.find('?') + 1));
  auto qv = [&](const char* k, const std::string& d = "") {
    auto it = q.find(k);
    return it == q.end() ? d : it->second;
  };
  const std::string& m = req.method;
  J body = apiserver::json_depth(req.body) > 64
               ? J(nullptr)
               : J::parse(req.body.empty() ? "{}" : req.body, nullptr, false);
  if (path == "/healthz") return jresp(200, J{{"ok", true}});
  if (path == "/counters") {
    if (m == "DELETE" || m == "POST") {
      S.counters.clear();
      S.counters_by_resource.clear();
      return jresp(200, J{{"reset", true}});
    }
    J out = J::object();
    for (auto& [c, vs] : qv("by") == "resource" ? S.counters_by_resource : S.counters)
      for (auto& [v, n] : vs)
        out[c][v] = n;
    return jresp(200, out);
  }
  if (path == "/counters/reset") {
    S.counters.clear();
    S.counters_by_resource.clear();
    return jresp(200, J{{"reset", true}});
  }
  if (path == "/faults" || path.rfind("/faults/", 0) == 0) {
    if (m == "GET") {
      J arr = J::array();
      for (auto& f : S.faults)
        arr.push_back(f.to_json());
      return jresp(200, arr);
    }
    if (m == "DELETE") {
      if (path == "/faults") {
        S.faults.clear();
      } else {
        int id = std::atoi(path.substr(8).c_str());
        S.faults.erase(std::remove_if(S.faults.begin(), S.faults.end(),
                                      [&](const Fault& f) { return f.id == id; }),
                       S.faults.end());
      }
      return jresp(200, J{{"ok", true}});
    }
    if (m == "POST") {
      if (!body.is_object()) return jresp(400, J{{"error", "body must be a JSON object"}});
      Fault f;
      f.action = body.value("action", std::string());
      static const std::set<std::string> kActions = {"latency", "error",      "429", "malformed",
                                                     "drop",    "drop-after", "hang"};
      if (!kActions.count(f.action))
        return jresp(400, J{{"error",
                             "action must be one of latency, error, 429, malformed, "
                             "drop, drop-after, hang"}});
      try {
        f.client = body.value("client", std::string("*"));
        f.user_agent = body.value("userAgent", std::string());
        f.verb = body.value("verb", std::string("*"));
        f.resource = body.value("resource", std::string("*"));
        f.name = body.value("name", std::string("*"));
        f.status = body.value("status", 503);
        f.ms = body.value("ms", 0);
        f.retry_after = body.value("retryAfter", 1);
        f.count = body.value("count", int64_t{-1});
        f.probability = body.value("probability", 1.0);
      } catch (const std::exception& e) {
        return jresp(400, J{{"error", e.what()}});
      }
      f.id = S.next_fault++;
      S.faults.push_back(f);
      return jresp(200, f.to_json());
    }
  }
  if (path == "/latency") {
    if (m == "GET") return jresp(200, J{{"ms", S.global_latency_ms}});
    S.global_latency_ms =
        std::max(0, std::atoi(qv("ms", std::to_string(body.value("ms", 0))).c_str()));
    return jresp(200, J{{"ms", S.global_latency_ms}});
  }
  if (path == "/partition") {
    std::string client = qv("client", body.is_object() ? body.value("client", std::string()) : "");
    if (m == "GET") {
      J arr = J::array();
      for (auto& c : S.partitioned)
        arr.push_back(c);
      return jresp(200, arr);
    }
    if (client.empty()) return jresp(400, J{{"error", "client= is required"}});
    if (m == "POST" || m == "PUT") {
      S.partitioned.insert(client);
    } else if (m == "DELETE") {
      S.partitioned.erase(client);
      // Requests hung by the partition and frozen watches are closed: the client reconnects.
      S.each_conn([&](Conn& c) {
        if (c.client == client && (c.hung || c.watching) && c.close) c.close();
      });
    }
    return jresp(200, J{{"partitioned", S.partitioned.count(client) > 0}, {"client", client}});
  }
  if (path == "/watches") {
    size_t n = 0;
    J by = J::object();
    S.each_conn([&](Conn& c) {
      if (c.watching) {
        ++n;
        by[c.client] = by.value(c.client, 0) + 1;
      }
    });
    return jresp(200, J{{"open", n}, {"byClient", by}});
  }
  if (path == "/watches/cut") {
    std::string client = qv("client");
    bool clean = qv("clean") == "1" || qv("clean") == "true";
    size_t n = 0;
    S.each_conn([&](Conn& c) {
      if (c.watching && (client.empty() || c.client == client)) {
        c.cut = true;
        c.cut_clean = clean;
        if (c.wake) c.wake();
        ++n;
      }
    });
    return jresp(200, J{{"cut", n}});
  }
  if (path == "/tokens/reload") {
    S.api.maybe_reload_tokens(true);
    return jresp(200, J{{"ok", true}});
  }
  if (path == "/state")
    return jresp(200, J{{"resourceVersion", std::to_string(S.api.current_rv())}});
  if (path.rfind("/leases/", 0) == 0) {
    std::string rest = path.substr(8);
    auto slash = rest.find('/');
    if (slash == std::string::npos) return jresp(404, J{{"error", "use /leases/NS/NAME"}});
    std::string ns = apiserver::url_decode(rest.substr(0, slash), false);
    std::string name = apiserver::url_decode(rest.substr(slash + 1), false);
    if (m == "GET") {
      auto o = S.api.raw_get("leases", ns, name);
      if (!o) return jresp(404, J{{"error", "not found"}});
      return jresp(200, *o);
    }
    if (m == "PUT" || m == "POST") {
      if (!body.is_object()) return jresp(400, J{{"error", "body must be a Lease JSON object"}});
      try {
        return jresp(200, S.api.raw_put_lease(ns, name, body));
      } catch (const std::exception& e) {
        return jresp(400, J{{"error", e.what()}});
      }
    }
    if (m == "DELETE") {
      bool ok = S.api.raw_delete("leases", ns, name);
      return jresp(ok ? 200 : 404, J{{"deleted", ok}});
    }
  }
  return jresp(404, J{{"error", "unknown control endpoint " + path}});
}

net::awaitable<void> control_session(beast::tcp_stream stream, State& S) {
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
    apiserver::HttpResponse r;
    try {
      r = control(S, convert(msg, ""));
    } catch (const std::exception& e) {
      r = jresp(500, J{{"error", e.what()}});
    }
    co_await write_all(stream, serialize(r, keep_alive, false), ec);
    if (ec || !keep_alive) break;
  }
  close_stream(stream);
}

// ----------------------------------------------------------------------------------- main
net::awaitable<void> accept_loop(tcp::acceptor& acc, State& S, ssl::context* tls,
                                 bool control_plane) {
  for (;;) {
    beast::error_code ec;
    tcp::socket sock = co_await acc.async_accept(net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      if (ec == net::error::operation_aborted) co_return;
      continue;
    }
    sock.set_option(tcp::no_delay(true), ec);
    auto exec = acc.get_executor();
    if (control_plane) {
      net::co_spawn(exec, control_session(beast::tcp_stream(std::move(sock)), S), net::detached);
    } else if (tls) {
      net::co_spawn(exec,
                    api_session(beast::ssl_stream<beast::tcp_stream>(
                                    beast::tcp_stream(std::move(sock)), *tls),
                                S, true),
                    net::detached);
    } else {
      net::co_spawn(exec, api_session(beast::tcp_stream(std::move(sock)), S, false), net::detached);
    }
  }
}

void usage() {
  std::cout <<
      R"(leasehold-test-apiserver: a stand-in kube-apiserver for tests (Leases, Events, Pods).

  --address ADDR          listen address (default 127.0.0.1)
  --port N                HTTPS port (default 0 = pick one)
  --control-port N        plain-HTTP control port on 127.0.0.1 (default 0 = pick one)
  --tls-cert FILE         server certificate chain (PEM); without it the API is plain HTTP
  --tls-key FILE          private key (PEM)
  --token-file FILE       lines token,user[,uid[,"group1,group2"]]; user admin or group
                          system:masters = full rights; re-read when it changes or on SIGHUP
  --token TOKEN=USER      add a token (repeatable; USER admin = full rights)
  --token-grace SECONDS   removed tokens keep working this long (default 0)
  --rbac FILE             Role/ClusterRole/RoleBinding/ClusterRoleBinding/ServiceAccount YAML
                          (repeatable)
  --pods FILE             seed Pods (JSON or YAML: a Pod, a list, or a PodList)
  --pod NS/NAME[=IP]      seed one Pod (repeatable)
  --watch-history N       watch cache window in events per resource (default 1000)
  --latency-ms N          delay every API request by N ms
  --deny USER:VERB:RESOURCE  always forbid (repeatable; * wildcards)
The first stdout line is {"port":N,"controlPort":M}. See tests/apiserver/README.md.
)";
}

}  // namespace

int main(int argc, char** argv) {
  std::string address = "127.0.0.1", cert, key;
  int port = 0, control_port = 0;
  auto S = std::make_unique<State>();
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      std::string a = args[i];
      std::string val;
      auto eq = a.find('=');
      bool inline_val = a.rfind("--", 0) == 0 && eq != std::string::npos;
      if (inline_val) {
        val = a.substr(eq + 1);
        a = a.substr(0, eq);
      }
      auto next = [&]() -> std::string {
        if (inline_val) return val;
        if (i + 1 >= args.size()) throw std::runtime_error(a + " needs a value");
        return args[++i];
      };
      std::string err;
      if (a == "--help" || a == "-h") {
        usage();
        return 0;
      } else if (a == "--address") {
        address = next();
      } else if (a == "--port") {
        port = std::stoi(next());
      } else if (a == "--control-port") {
        control_port = std::stoi(next());
      } else if (a == "--tls-cert") {
        cert = next();
      } else if (a == "--tls-key") {
        key = next();
      } else if (a == "--token-file") {
        if (!S->api.load_tokens(next(), err)) throw std::runtime_error(err);
      } else if (a == "--token") {
        std::string t = next();
        auto p = t.find('=');
        if (p == std::string::npos) throw std::runtime_error("--token wants TOKEN=USER");
        apiserver::TokenEntry e;
        e.user = t.substr(p + 1);
        e.admin = e.user == "admin";
        S->api.add_token(t.substr(0, p), e);
      } else if (a == "--token-grace") {
        S->api.set_token_grace(std::stoi(next()));
      } else if (a == "--rbac") {
        if (!S->api.load_rbac(next(), err)) throw std::runtime_error(err);
      } else if (a == "--pods") {
        if (!S->api.load_pods(next(), err)) throw std::runtime_error(err);
      } else if (a == "--pod") {
        if (!S->api.add_pod_spec(next(), err)) throw std::runtime_error(err);
      } else if (a == "--watch-history") {
        S->api.set_watch_history(static_cast<size_t>(std::stoul(next())));
      } else if (a == "--latency-ms") {
        S->global_latency_ms = std::stoi(next());
      } else if (a == "--deny") {
        S->api.add_deny(next());
      } else {
        throw std::runtime_error("unknown flag " + a + " (see --help)");
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "leasehold-test-apiserver: " << e.what() << "\n";
    return 2;
  }

  net::io_context io(1);
  std::unique_ptr<ssl::context> tls;
  try {
    if (!cert.empty()) {
      tls = std::make_unique<ssl::context>(ssl::context::tls_server);
      tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
      tls->use_certificate_chain_file(cert);
      tls->use_private_key_file(key.empty() ? cert : key, ssl::context::pem);
      SSL_CTX_set_alpn_select_cb(
          tls->native_handle(),
          [](SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
             unsigned int inlen, void*) -> int {
            // Only HTTP/1.1 is spoken; refuse h2 so clients fall back.
            for (unsigned i = 0; i + 1 <= inlen;) {
              unsigned len = in[i];
              if (i + 1 + len <= inlen && len == 8 && std::memcmp(in + i + 1, "http/1.1", 8) == 0) {
                *out = in + i + 1;
                *outlen = 8;
                return SSL_TLSEXT_ERR_OK;
              }
              i += 1 + len;
            }
            return SSL_TLSEXT_ERR_NOACK;
          },
          nullptr);
    }
  } catch (const std::exception& e) {
    std::cerr << "leasehold-test-apiserver: TLS setup: " << e.what() << "\n";
    return 2;
  }
  tcp::acceptor api_acc(io), ctl_acc(io);
  try {
    tcp::endpoint ep(net::ip::make_address(address), static_cast<unsigned short>(port));
    api_acc.open(ep.protocol());
    api_acc.set_option(net::socket_base::reuse_address(true));
    api_acc.bind(ep);
    api_acc.listen();
    if (control_port >= 0) {
      tcp::endpoint cep(net::ip::make_address("127.0.0.1"),
                        static_cast<unsigned short>(control_port));
      ctl_acc.open(cep.protocol());
      ctl_acc.set_option(net::socket_base::reuse_address(true));
      ctl_acc.bind(cep);
      ctl_acc.listen();
    }
  } catch (const std::exception& e) {
    std::cerr << "leasehold-test-apiserver: listen: " << e.what() << "\n";
    return 2;
  }
  J hello = J{{"port", api_acc.local_endpoint().port()},
              {"controlPort", ctl_acc.is_open() ? ctl_acc.local_endpoint().port() : 0}};
  std::cout << apiserver::dumps(hello) << std::endl;

  net::co_spawn(io, accept_loop(api_acc, *S, tls.get(), false), net::detached);
  if (ctl_acc.is_open()) net::co_spawn(io, accept_loop(ctl_acc, *S, nullptr, true), net::detached);

  net::signal_set stop(io, SIGINT, SIGTERM);
  stop.async_wait([&](const beast::error_code&, int) { io.stop(); });
  net::signal_set hup(io, SIGHUP);
  std::function<void()> arm_hup = [&] {
    hup.async_wait([&](const beast::error_code& ec, int) {
      if (ec) return;
      S->api.maybe_reload_tokens(true);
      arm_hup();
    });
  };
  arm_hup();
  net::steady_timer reload(io);
  std::function<void()> arm_reload = [&] {
    reload.expires_after(500ms);
    reload.async_wait([&](const beast::error_code& ec) {
      if (ec) return;
      S->api.maybe_reload_tokens(false);
      arm_reload();
    });
  };
  arm_reload();
  ::signal(SIGPIPE, SIG_IGN);
  io.run();
  return 0;
}

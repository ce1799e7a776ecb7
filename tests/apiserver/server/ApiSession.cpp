// API connections (see ApiSession.h).
#include "server/ApiSession.h"

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>

#include <boost/beast/http.hpp>

#include "http/StatusResponses.h"
#include "server/HttpWire.h"
#include "server/WatchStream.h"

namespace apiserver {

namespace http = beast::http;
namespace ssl = net::ssl;
using namespace std::chrono_literals;

// GCC 12 reports the coroutine frame's own operator new/delete pair of this function as
// mismatched once it inlines them here (GCC PR middle-end/109224, a false positive: the unsized
// new and the sized delete of asio's awaitable frame belong together).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

template <class Stream>
net::awaitable<void> api_session(Stream stream, ServerState& S, bool tls) {
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
  auto conn = std::make_shared<Connection>();
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
        HttpResponse r;
        r.status = 413;
        r.body = status_json(413, "RequestEntityTooLarge",
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
    HttpRequest req = convert(msg, local);
    RequestInfo info = S.api.classify(req);
    std::string client = client_of(info);
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
    int latency_ms = S.global_latency_ms;
    FaultRule fault;
    bool has_fault = false;
    if (const FaultRule* f = S.faults.pick(info, req.header("user-agent"), latency_ms)) {
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
        co_await write_all(stream, serialize(fault.response(), keep_alive, head), ec);
        if (ec || !keep_alive) break;
        continue;
      }
    }
    Result res;
    try {
      res = S.api.handle(req, info);
    } catch (const std::exception& e) {
      res.response.status = 500;
      res.response.body = status_json(500, "InternalError",
                                      std::string("Internal error occurred: ") + e.what(), nullptr);
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

template net::awaitable<void> api_session(beast::tcp_stream, ServerState&, bool);
template net::awaitable<void> api_session(beast::ssl_stream<beast::tcp_stream>, ServerState&, bool);

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace apiserver

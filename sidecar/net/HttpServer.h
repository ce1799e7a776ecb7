#pragma once
// A small HTTP/1.1 server for the status API and the probes, on the daemon's one io_context.
// Plain TCP only (it listens on loopback or serves kubelet probes).
//
// - Exact-path routing; unknown path -> 404, known path with another method -> 405 + Allow.
//   HEAD is served by the GET handler without the body.
// - Requests on one connection are handled strictly in order (keep-alive and pipelining are
//   safe); "Connection: close" and HTTP/1.0 without keep-alive are honoured.
// - Limits: header block > maxHeaderBytes -> 431, body > maxBodyBytes -> 413, malformed -> 400;
//   each of these closes the connection after the response. Connections idle longer than
//   idleTimeout are closed. Connections beyond maxConnections are closed on accept.
// - Event streams (routeEvents): 200 with Content-Type: text/event-stream, Cache-Control:
//   no-cache and Connection: close; the body is close-delimited (no Content-Length, no chunked
//   encoding), which every SSE client understands. See EventStream.h for buffering/dropping.
// - Handlers run synchronously on the event loop and must not block. An exception escaping a
//   handler becomes a 500 (it never reaches the event loop).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/EventStream.h"
#include "net/HttpHeaders.h"

namespace boost::asio {
class io_context;
}

namespace leasehold::net {
namespace detail {
struct HttpServerState;  // defined in HttpServer.cpp
}

struct ServerRequest {
  std::string method;
  std::string target;  // as received: path + "?" + query
  std::string path;    // target before '?', not percent-decoded
  std::string query;   // after '?', without it; empty when none
  HttpHeaders headers;
  std::string body;
};

struct ServerResponse {
  int status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
  // Extra header fields. Content-Length and Connection are the server's business.
  std::vector<std::pair<std::string, std::string>> headers;
};

class HttpServer {
 public:
  struct Options {
    std::string address = "127.0.0.1";  // IPv4 or IPv6 literal ("::" = all)
    std::uint16_t port = 0;             // 0 = pick a free port (see port())
    std::size_t maxHeaderBytes = 8192;
    std::size_t maxBodyBytes = 64 * 1024;
    std::chrono::seconds idleTimeout{60};
    std::size_t maxConnections = 1024;
    std::size_t eventStreamBufferBytes = 64 * 1024;  // per client, see EventStream.h
  };
  using Handler = std::function<ServerResponse(const ServerRequest&)>;
  using EventStreamOpened = std::function<void(std::shared_ptr<EventStream>)>;

  HttpServer(boost::asio::io_context& io, Options options);
  // Closes every connection at once; handlers are not called any more.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting. Returns an error message naming the address on failure.
  std::optional<std::string> listen();
  // The bound port (the real one when Options::port was 0); 0 before listen().
  std::uint16_t port() const;

  // Register before or after listen(); a later registration for the same method+path replaces.
  void route(std::string method, std::string path, Handler handler);
  // GET on `path` opens an event stream: the response header is queued, then onOpen gets the
  // stream (it may send() at once).
  void routeEvents(std::string path, EventStreamOpened onOpen);

  // Graceful stop: stops accepting, lets responses being written finish (then closes those
  // connections), closes idle connections and event streams. The io_context can then run out.
  void stop();

  std::size_t connectionCount() const;
  std::size_t eventStreamCount() const;

 private:
  std::shared_ptr<detail::HttpServerState> state_;
};

}  // namespace leasehold::net

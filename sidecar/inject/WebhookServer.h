#pragma once
// The admission webhook's HTTPS server (HTTP/1.1 over TLS 1.2+), on the one io_context. The
// API server is its client: one or a few keep-alive connections, one small request at a time.
//
// - The certificate can be replaced while serving (useCertificate): connections accepted after
//   that handshake with the new one; those open keep the one they started with.
// - Exact-path routing with net/HttpServer.h's request and response types: unknown path -> 404,
//   another method -> 405. Handlers run on the event loop and must not block; an exception
//   escaping one becomes a 500.
// - Limits: a body over maxBodyBytes -> 413, a header block over 16 KiB -> 431, a malformed
//   request -> 400, each closing the connection once the client stopped sending (what it still
//   sends is read and dropped, up to 16 MiB or 2 s, so that the close does not reset the
//   connection under the response). The TLS handshake and each response must complete within
//   requestTimeout; the next request (the idle wait before it included) within idleTimeout (or
//   requestTimeout if larger); connections beyond maxConnections are closed on accept.
// - stop(): stops accepting, lets a request being handled or written finish, closes idle
//   connections; the io_context then runs out.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "net/HttpServer.h"

namespace boost::asio {
class io_context;
}

namespace leasehold::inject {
namespace detail {
struct WebhookServerState;  // in WebhookServer.cpp
}

class WebhookServer {
 public:
  struct Options {
    std::string address = "0.0.0.0";
    std::uint16_t port = 8443;  // 0 = a free port (see port())
    // An AdmissionReview carries one object: the API server takes at most 3 MiB per request.
    std::size_t maxBodyBytes = 4 * 1024 * 1024;
    std::chrono::seconds requestTimeout{10};
    std::chrono::seconds idleTimeout{90};
    std::size_t maxConnections = 256;
  };
  using Handler = std::function<net::ServerResponse(const net::ServerRequest&)>;

  WebhookServer(boost::asio::io_context& io, Options options);
  ~WebhookServer();
  WebhookServer(const WebhookServer&) = delete;
  WebhookServer& operator=(const WebhookServer&) = delete;

  // The serving certificate (PEM, the chain after the leaf) and its key; an error message
  // (the previous certificate stays) when they cannot be used or do not match.
  std::optional<std::string> useCertificate(const std::string& certPem, const std::string& keyPem);
  // Binds and starts accepting (needs a certificate). An error message naming the address.
  std::optional<std::string> listen();
  std::uint16_t port() const;
  void route(std::string method, std::string path, Handler handler);
  void stop();
  std::size_t connectionCount() const;

 private:
  std::shared_ptr<detail::WebhookServerState> state_;
};

}  // namespace leasehold::inject

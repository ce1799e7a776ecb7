#pragma once
// The daemon's HTTP(S) client for the Kubernetes API: one persistent keep-alive connection for
// ordinary requests, plus one dedicated connection per stream (watches). Runs entirely on the
// caller's io_context (one thread); nothing blocks and no exception escapes into the event loop.
// Host names are looked up through Options::resolver, never with asio's resolver (which runs
// getaddrinfo on a private thread: one more than the sidecar may have).
//
// Contract for ordinary requests:
// - Requests queue and go one at a time, in order, over the shared connection.
// - The completion callback runs exactly once, always asynchronously (never inside request()).
// - Request::deadline starts when request() is called and covers waiting in the queue, connect,
//   TLS handshake, writing and reading the whole response; on expiry the connection is closed
//   and the result is Error::Kind::Timeout.
// - Transparent retry, at most once, only when the request went out on a REUSED keep-alive
//   connection, not a single byte of response arrived, and the connection was found dead
//   (EOF/reset): the server most likely closed the idle connection before our request arrived.
//   Then the request is retried on a fresh connection if either the write itself failed (the
//   server cannot have acted on an incomplete request) or the method is idempotent (GET, HEAD,
//   PUT, DELETE, OPTIONS). POST and PATCH that were fully written are never retried: they may have
//   been processed, and the caller gets Error::Kind::Closed.
// - Error messages never contain header values (Authorization!) or bodies.
//
// Destroying the client closes everything and DROPS pending callbacks without calling them; call
// shutdown() first and let the io_context run if callers need their Cancelled results.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "net/HttpHeaders.h"
#include "net/TlsOptions.h"

namespace boost::asio {
class io_context;
}

namespace leasehold::net {

class HostResolver;

class HttpsClient {
 public:
  struct Options {
    // Looks up host names (IP literals need nothing): WorkerHostResolver in production, so that
    // getaddrinfo runs on the process's one blocking worker. Without one, a host name fails
    // with Kind::Connect. Not owned; must outlive the client.
    HostResolver* resolver = nullptr;
    // Largest accepted response body of an ordinary request; larger -> Error::Kind::TooLarge.
    std::size_t maxResponseBytes = 4 * 1024 * 1024;
    // Largest accepted response header block (status line + fields).
    std::uint32_t maxHeaderBytes = 64 * 1024;
  };

  struct Request {
    std::string method = "GET";
    std::string target;  // "/apis/...?..." (appended to the base URL's path prefix)
    // Sent as given, except framing: "Host" is added unless present; Content-Length is always
    // computed here (a caller's Content-Length/Transfer-Encoding is dropped). Names and values
    // containing CR/LF are refused (Kind::Protocol, naming the header but not its value).
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::chrono::milliseconds deadline{10000};
  };

  struct Response {
    int status = 0;
    HttpHeaders headers;
    std::string body;
  };

  struct Error {
    enum class Kind {
      Timeout,    // deadline (or stream idle timeout) expired
      Connect,    // resolve or TCP connect failed, or the base URL is unusable
      Tls,        // handshake failed: verification, protocol, client certificate
      Protocol,   // malformed HTTP from the server, or an invalid request (e.g. CR/LF in a header)
      TooLarge,   // response header or body over the limit
      Cancelled,  // shutdown() (or the stream was cancelled)
      Closed,     // the server closed the connection before the response was complete
    };
    Kind kind;
    std::string message;
  };
  static const char* kindName(Error::Kind kind);

  class Result {
   public:
    Result(Response response) : value_(std::move(response)) {}
    Result(Error error) : value_(std::move(error)) {}
    bool ok() const { return std::holds_alternative<Response>(value_); }
    const Response& response() const { return std::get<Response>(value_); }
    Response& response() { return std::get<Response>(value_); }
    const Error& error() const { return std::get<Error>(value_); }

   private:
    std::variant<Response, Error> value_;
  };

  struct StreamCallbacks {
    // Once, when the status line and header fields have arrived (any status).
    std::function<void(int status, const HttpHeaders& headers)> onHeaders;
    // Body bytes as they arrive: chunk boundaries are not preserved and mean nothing (use
    // LineSplitter). For non-2xx statuses the body is bounded by StreamOptions::maxErrorBodyBytes.
    std::function<void(std::string_view bytes)> onData;
    // Once at the end: nullopt when the response completed normally (chunked terminator,
    // Content-Length reached, or close-delimited EOF), else why it ended.
    std::function<void(std::optional<Error> error)> onEnd;
  };

  struct StreamOptions {
    // Ends the stream with Kind::Timeout when no body byte arrived for this long (0 = never).
    std::chrono::milliseconds idleTimeout{0};
    // Body bound for non-2xx responses (2xx stream bodies are unbounded).
    std::size_t maxErrorBodyBytes = 64 * 1024;
  };

  // Controls one stream. cancel() ends it SILENTLY: after cancel() returns no callback of the
  // stream runs any more (not even onEnd), so the owner may go away. Dropping the last reference
  // to the handle cancels the stream too. (shutdown() of the client, by contrast, ends streams
  // with onEnd(Cancelled).)
  class StreamHandle {
   public:
    virtual ~StreamHandle() = default;
    virtual void cancel() = 0;
    // True until onEnd has been delivered or cancel() was called.
    virtual bool active() const = 0;
  };

  // baseUrl: "https://host:port[/prefix]" (IPv6 in brackets) or "http://...". Problems with the
  // URL or the TLS material do not throw: configurationError() reports them and every request
  // fails with Kind::Connect (URL) or Kind::Tls (TLS material).
  HttpsClient(boost::asio::io_context& io, std::string baseUrl, TlsOptions tls, Options options);
  HttpsClient(boost::asio::io_context& io, std::string baseUrl, TlsOptions tls = {});
  ~HttpsClient();
  HttpsClient(const HttpsClient&) = delete;
  HttpsClient& operator=(const HttpsClient&) = delete;

  const std::optional<std::string>& configurationError() const;

  void request(Request request, std::function<void(Result)> onComplete);

  // Opens a dedicated connection for a long-lived response (watch). Request::deadline covers
  // connect + TLS + write + receiving the response header; after that only idleTimeout applies.
  std::shared_ptr<StreamHandle> stream(Request request, StreamCallbacks callbacks,
                                       StreamOptions options);
  std::shared_ptr<StreamHandle> stream(Request request, StreamCallbacks callbacks);

  // New TLS material (certificate rotation). Takes effect for the next connection made; the open
  // keep-alive connection is kept. Invalid material is rejected (returned message) and the
  // previous material stays in use.
  std::optional<std::string> setTls(TlsOptions tls);

  // Closes the keep-alive connection if no request is using it.
  void closeIdle();

  // Fails queued and in-flight requests and ends streams with Kind::Cancelled (asynchronously),
  // closes all connections and rejects later requests, so that the io_context can run out.
  void shutdown();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace leasehold::net

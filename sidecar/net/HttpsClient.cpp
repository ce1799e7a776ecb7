// The HTTPS client to the API server (contract in HttpsClient.h). Why ~800 lines: one connection
// object carries resolve, connect, TLS handshake with verification, request writing, the
// response parser (content-length, chunked, close-delimited), streaming bodies, deadlines and
// the one safe retry rule, which all act on the same socket and buffers; TLS setup is in
// TlsClientContext and line splitting in LineSplitter.
#include "net/HttpsClient.h"

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <deque>
#include <limits>

#include "net/BaseUrl.h"
#include "net/HostResolver.h"
#include "net/TlsClientContext.h"

namespace leasehold::net {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;
using Error = HttpsClient::Error;
using Kind = HttpsClient::Error::Kind;

constexpr std::size_t kReadChunkBytes = 16 * 1024;

std::string_view toStd(boost::beast::string_view s) {
  return {s.data(), s.size()};
}

bool isIdempotent(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" ||
         method == "OPTIONS" || method == "TRACE";
}

// EOF and friends: the peer went away (possibly a keep-alive connection it had closed while idle).
bool isConnectionLoss(const error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::error::connection_aborted ||
         ec == ssl::error::stream_truncated;
}

Error classifyIoError(const error_code& ec, std::string_view phase) {
  const std::string during = " while " + std::string(phase);
  if (ec == http::error::body_limit || ec == http::error::header_limit ||
      ec == http::error::buffer_overflow) {
    return {Kind::TooLarge, "response exceeds the size limit"};
  }
  if (isConnectionLoss(ec)) return {Kind::Closed, "server closed the connection" + during};
  if (ec == http::error::partial_message) {
    return {Kind::Closed, "server closed the connection before the response was complete"};
  }
  if (ec.category() == http::make_error_code(http::error::bad_version).category()) {
    return {Kind::Protocol, "malformed HTTP response: " + ec.message()};
  }
  if (ec.category() == asio::error::get_ssl_category()) {
    return {Kind::Tls, "TLS error" + during + ": " + ec.message()};
  }
  return {Kind::Closed, "connection failed" + during + ": " + ec.message()};
}

// Parses one HTTP response. Body bytes either accumulate in `body` (ordinary requests; the limit
// is the parser's body_limit) or go to `sink` as they are parsed (streams).
class ResponseParser final : public http::basic_parser<false> {
 public:
  using BodySink = std::function<void(std::string_view bytes, error_code& ec)>;

  int status = 0;
  HttpHeaders headers;
  std::string body;
  BodySink sink;
  std::function<void()> onHeaderDone;
  std::size_t expectedBodyLimit = 0;

 private:
  void on_request_impl(http::verb, boost::beast::string_view, boost::beast::string_view, int,
                       error_code&) override {}
  void on_response_impl(int code, boost::beast::string_view, int, error_code&) override {
    status = code;
  }
  void on_field_impl(http::field, boost::beast::string_view name, boost::beast::string_view value,
                     error_code&) override {
    headers.add(std::string(toStd(name)), std::string(toStd(value)));
  }
  void on_header_impl(error_code&) override {
    if (onHeaderDone) onHeaderDone();
  }
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override {
    if (!sink && length) body.reserve(std::min<std::uint64_t>(*length, expectedBodyLimit));
  }
  std::size_t on_body_impl(boost::beast::string_view bytes, error_code& ec) override {
    deliver(toStd(bytes), ec);
    return bytes.size();
  }
  void on_chunk_header_impl(std::uint64_t, boost::beast::string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view bytes,
                                 error_code& ec) override {
    deliver(toStd(bytes), ec);
    return bytes.size();
  }
  void on_finish_impl(error_code&) override {}

  void deliver(std::string_view bytes, error_code& ec) {
    if (sink) {
      sink(bytes, ec);
    } else {
      body.append(bytes);
    }
  }
};

// One TCP connection, with TLS on top for https. Sequential use only: one write or one read at a
// time, which is all HTTP/1.1 without pipelining needs.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(asio::io_context& io, const BaseUrl& url, std::shared_ptr<ssl::context> tlsContext,
             const TlsOptions& tlsOptions, HostResolver* resolver)
      : url_(url),
        tlsOptions_(tlsOptions),
        tlsContext_(std::move(tlsContext)),
        resolver_(resolver) {
    if (url_.tls) {
      tls_.emplace(io, *tlsContext_);
    } else {
      plain_.emplace(io);
    }
  }

  // Resolve (unless the host is an IP literal), connect, and for https do the TLS handshake.
  void open(std::function<void(std::optional<Error>)> done) {
    error_code ec;
    const auto address = asio::ip::make_address(url_.host, ec);
    if (!ec) {
      connectTo(std::vector<tcp::endpoint>{tcp::endpoint(address, url_.port)}, std::move(done));
      return;
    }
    if (!resolver_) {
      // Later, from the loop, like every other outcome of open().
      asio::post(socket().get_executor(), [self = shared_from_this(), done = std::move(done)] {
        if (self->closed_) return done(Error{Kind::Cancelled, "connection closed"});
        done(Error{Kind::Connect,
                   "cannot resolve " + self->url_.host + ": no host resolver configured"});
      });
      return;
    }
    // The answer arrives on the loop; after close() it is dropped (Cancelled, which the callers
    // ignore), and a lookup that has not started by then is skipped.
    resolver_->resolve(
        url_.host, url_.port, abandoned_,
        [self = shared_from_this(), done = std::move(done)](HostResolver::Answer answer) {
          if (self->closed_) return done(Error{Kind::Cancelled, "connection closed"});
          const std::string& host = self->url_.host;
          if (answer.problem) {
            return done(Error{Kind::Connect, "cannot resolve " + host + ": " + *answer.problem});
          }
          std::vector<tcp::endpoint> endpoints;
          for (const auto& text : answer.addresses) {
            error_code bad;
            const auto resolved = asio::ip::make_address(text, bad);
            if (!bad) endpoints.emplace_back(resolved, self->url_.port);
          }
          if (endpoints.empty()) {
            return done(Error{Kind::Connect, "cannot resolve " + host + ": no usable address"});
          }
          self->connectTo(std::move(endpoints), std::move(done));
        });
  }

  // Starts a request's exchange: bytesRead() counts from here, so that a write that fails on a
  // reused connection is not mistaken for one that got an answer (the previous response's bytes
  // must not count).
  void write(const std::string& bytes, std::function<void(const error_code&)> done) {
    bytesRead_ = 0;
    auto handler = [self = shared_from_this(), done = std::move(done)](const error_code& ec,
                                                                       std::size_t) { done(ec); };
    if (tls_) {
      asio::async_write(*tls_, asio::buffer(bytes), std::move(handler));
    } else {
      asio::async_write(*plain_, asio::buffer(bytes), std::move(handler));
    }
  }

  // Feeds the parser until it has a complete message. `parser` must outlive the operation.
  void readMessage(ResponseParser& parser, std::function<void(const error_code&)> done) {
    parseBuffered(parser, std::move(done));
  }

  // Bytes received since the last write() started.
  std::size_t bytesRead() const { return bytesRead_; }
  bool isOpen() const { return !closed_ && socket().is_open(); }

  void close() {
    closed_ = true;
    abandoned_->store(true);
    error_code ignored;
    socket().close(ignored);
  }

 private:
  tcp::socket& socket() { return tls_ ? tls_->next_layer() : *plain_; }
  const tcp::socket& socket() const { return tls_ ? tls_->next_layer() : *plain_; }

  void connectTo(std::vector<tcp::endpoint> endpoints,
                 std::function<void(std::optional<Error>)> done) {
    auto self = shared_from_this();
    asio::async_connect(
        socket(), endpoints,
        [self, done = std::move(done)](const error_code& ec, const tcp::endpoint&) mutable {
          if (self->closed_) return done(Error{Kind::Cancelled, "connection closed"});
          if (ec) {
            return done(Error{Kind::Connect,
                              "cannot connect to " + self->url_.hostHeader + ": " + ec.message()});
          }
          error_code ignored;
          self->socket().set_option(tcp::no_delay(true), ignored);
          if (!self->tls_) return done(std::nullopt);
          self->handshake(std::move(done));
        });
  }

  void handshake(std::function<void(std::optional<Error>)> done) {
    SSL* ssl = tls_->native_handle();
    if (auto problem = TlsClientContext::prepareSession(ssl, tlsOptions_, url_.host)) {
      return done(Error{Kind::Tls, *problem});
    }
    tls_->async_handshake(ssl::stream_base::client, [self = shared_from_this(),
                                                     done = std::move(done)](const error_code& ec) {
      if (self->closed_) return done(Error{Kind::Cancelled, "connection closed"});
      if (ec) {
        const std::string detail =
            TlsClientContext::describeHandshakeFailure(self->tls_->native_handle(), ec.message());
        return done(
            Error{Kind::Tls, "TLS handshake with " + self->url_.hostHeader + " failed: " + detail});
      }
      done(std::nullopt);
    });
  }

  void parseBuffered(ResponseParser& parser, std::function<void(const error_code&)> done) {
    while (buffer_.size() > 0 && !parser.is_done()) {
      error_code ec;
      const std::size_t used = parser.put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more) break;
      if (ec) return done(ec);
      if (used == 0) break;
    }
    if (parser.is_done()) return done({});
    auto onRead = [self = shared_from_this(), &parser, done = std::move(done)](
                      const error_code& ec, std::size_t n) mutable {
      self->buffer_.commit(n);
      self->bytesRead_ += n;
      if (ec) {
        if (isConnectionLoss(ec) && self->buffer_.size() == 0 && parser.got_some()) {
          // A close-delimited body ends at EOF.
          error_code eofError;
          parser.put_eof(eofError);
          if (!eofError && parser.is_done()) return done({});
          if (eofError) return done(eofError);
        }
        return done(ec);
      }
      self->parseBuffered(parser, std::move(done));
    };
    const auto space = buffer_.prepare(kReadChunkBytes);
    if (tls_) {
      tls_->async_read_some(space, std::move(onRead));
    } else {
      plain_->async_read_some(space, std::move(onRead));
    }
  }

  BaseUrl url_;
  TlsOptions tlsOptions_;
  std::shared_ptr<ssl::context> tlsContext_;  // kept alive for the stream's lifetime
  HostResolver* resolver_;                    // null: host names fail (IP literals need none)
  std::shared_ptr<std::atomic<bool>> abandoned_ = std::make_shared<std::atomic<bool>>(false);
  std::optional<ssl::stream<tcp::socket>> tls_;
  std::optional<tcp::socket> plain_;
  boost::beast::flat_buffer buffer_;
  std::size_t bytesRead_ = 0;
  bool closed_ = false;
};

// Serializes the request head and body into `wire`. Returns why the request is invalid, naming
// an offending header but never its value, or nullopt.
std::optional<std::string> serializeRequest(const HttpsClient::Request& request, const BaseUrl& url,
                                            std::string& wire) {
  auto hasBadChars = [](std::string_view s, std::string_view bad) {
    return s.find_first_of(bad) != std::string_view::npos;
  };
  using namespace std::string_view_literals;
  const auto controlChars = "\r\n\0"sv;
  if (request.method.empty() || hasBadChars(request.method, " \t\r\n\0"sv)) {
    return std::string("invalid request method");
  }
  if (!request.target.starts_with('/') || hasBadChars(request.target, " \t\r\n\0"sv)) {
    return std::string("invalid request target");
  }
  bool hasHost = false;
  std::size_t size = request.method.size() + url.pathPrefix.size() + request.target.size() + 64 +
                     url.hostHeader.size() + request.body.size();
  for (const auto& [name, value] : request.headers) {
    if (name.empty() || hasBadChars(name, ": \t\r\n\0"sv)) {
      return std::string("invalid request header name");
    }
    if (hasBadChars(value, controlChars)) {
      return "invalid value in request header \"" + name + "\"";
    }
    if (HttpHeaders::equalsIgnoreCase(name, "Host")) hasHost = true;
    size += name.size() + value.size() + 4;
  }
  wire.clear();
  wire.reserve(size);
  wire.append(request.method).append(" ").append(url.pathPrefix).append(request.target);
  wire.append(" HTTP/1.1\r\n");
  if (!hasHost) wire.append("Host: ").append(url.hostHeader).append("\r\n");
  for (const auto& [name, value] : request.headers) {
    // We frame the body ourselves; a caller's framing headers could only desynchronise it.
    if (HttpHeaders::equalsIgnoreCase(name, "Content-Length") ||
        HttpHeaders::equalsIgnoreCase(name, "Transfer-Encoding")) {
      continue;
    }
    wire.append(name).append(": ").append(value).append("\r\n");
  }
  const bool bodyExpected =
      request.method == "POST" || request.method == "PUT" || request.method == "PATCH";
  if (!request.body.empty() || bodyExpected) {
    wire.append("Content-Length: ").append(std::to_string(request.body.size())).append("\r\n");
  }
  wire.append("\r\n").append(request.body);
  return std::nullopt;
}

// One ordinary request from request() until its callback has been scheduled.
struct PendingRequest {
  explicit PendingRequest(asio::io_context& io) : deadlineTimer(io) {}
  HttpsClient::Request request;
  std::function<void(HttpsClient::Result)> onComplete;
  asio::steady_timer deadlineTimer;
  std::string wire;
  bool finished = false;
  bool retried = false;
};

// One try of a PendingRequest on one connection.
struct Attempt {
  std::shared_ptr<PendingRequest> pending;
  std::shared_ptr<Connection> connection;
  bool reusedConnection = false;
  bool requestWritten = false;
  const char* phase = "connecting";
  ResponseParser parser;
};

// A stream on its own connection; lives as long as an operation or the handle refers to it.
class StreamState : public std::enable_shared_from_this<StreamState> {
 public:
  StreamState(asio::io_context& io, HttpsClient::StreamCallbacks callbacks,
              HttpsClient::StreamOptions options, std::chrono::milliseconds headerDeadline)
      : callbacks_(std::move(callbacks)),
        options_(options),
        headerDeadline_(headerDeadline),
        timer_(io) {}

  void start(std::shared_ptr<Connection> connection, std::string wire) {
    connection_ = std::move(connection);
    wire_ = std::move(wire);
    parser_.header_limit(64 * 1024);
    // Unbounded. Not boost::none: Beast 1.74 compares "length > body_limit" with the optional,
    // and an empty optional is less than every length.
    parser_.body_limit(std::numeric_limits<std::uint64_t>::max());
    parser_.eager(true);
    parser_.onHeaderDone = [this] { onHeaderDone(); };
    parser_.sink = [this](std::string_view bytes, error_code& ec) { onBody(bytes, ec); };
    armTimer(std::chrono::steady_clock::now() + headerDeadline_);
    auto self = shared_from_this();
    connection_->open([self](std::optional<Error> error) {
      if (self->ended_) return;
      if (error) return self->end(std::move(error));
      self->phase_ = "sending request";
      self->connection_->write(self->wire_, [self](const error_code& ec) {
        if (self->ended_) return;
        if (ec) return self->end(classifyIoError(ec, self->phase_));
        self->phase_ = "waiting for response";
        self->connection_->readMessage(self->parser_, [self](const error_code& readError) {
          if (self->ended_) return;
          if (readError) return self->end(classifyIoError(readError, self->phase_));
          self->end(std::nullopt);
        });
      });
    });
  }

  // Ends without calling back (the handle's cancel()).
  void cancelSilently() { stop(); }

  // Ends with onEnd(error) scheduled on the io_context (the client's shutdown()).
  void endLater(asio::io_context& io, Error error, std::function<bool()> stillWanted) {
    if (ended_) return;
    stop();
    asio::post(io, [self = shared_from_this(), error = std::move(error),
                    stillWanted = std::move(stillWanted)]() mutable {
      if (stillWanted() && self->callbacks_.onEnd) self->callbacks_.onEnd(std::move(error));
    });
  }

  bool active() const { return !ended_; }

 private:
  void stop() {
    ended_ = true;
    ++timerGeneration_;
    timer_.cancel();
    if (connection_) connection_->close();
  }

  void end(std::optional<Error> error) {
    if (ended_) return;
    stop();
    if (callbacks_.onEnd) callbacks_.onEnd(std::move(error));
  }

  void onHeaderDone() {
    headerDone_ = true;
    phase_ = "receiving the response body";
    status_ = parser_.status;
    successful_ = status_ >= 200 && status_ < 300;
    lastData_ = std::chrono::steady_clock::now();
    ++timerGeneration_;
    timer_.cancel();
    if (options_.idleTimeout.count() > 0) armTimer(lastData_ + options_.idleTimeout);
    if (callbacks_.onHeaders) callbacks_.onHeaders(status_, parser_.headers);
  }

  void onBody(std::string_view bytes, error_code& ec) {
    if (ended_) {
      ec = asio::error::operation_aborted;  // stop parsing: cancelled from a callback
      return;
    }
    lastData_ = std::chrono::steady_clock::now();
    if (!successful_) {
      errorBodyBytes_ += bytes.size();
      if (errorBodyBytes_ > options_.maxErrorBodyBytes) {
        ec = http::error::body_limit;
        return;
      }
    }
    if (callbacks_.onData) callbacks_.onData(bytes);
    if (ended_) ec = asio::error::operation_aborted;
  }

  void armTimer(std::chrono::steady_clock::time_point at) {
    const auto generation = ++timerGeneration_;
    timer_.expires_at(at);
    timer_.async_wait([self = shared_from_this(), generation](const error_code& ec) {
      if (ec || self->ended_ || generation != self->timerGeneration_) return;
      self->onTimer();
    });
  }

  void onTimer() {
    if (!headerDone_) {
      return end(Error{Kind::Timeout, "no response header within " +
                                          std::to_string(headerDeadline_.count()) + " ms (" +
                                          phase_ + ")"});
    }
    const auto idleUntil = lastData_ + options_.idleTimeout;
    if (std::chrono::steady_clock::now() >= idleUntil) {
      return end(Error{Kind::Timeout,
                       "stream idle for " + std::to_string(options_.idleTimeout.count()) + " ms"});
    }
    armTimer(idleUntil);  // data arrived meanwhile: wait for the rest of the idle period
  }

  HttpsClient::StreamCallbacks callbacks_;
  HttpsClient::StreamOptions options_;
  std::chrono::milliseconds headerDeadline_;
  asio::steady_timer timer_;
  std::uint64_t timerGeneration_ = 0;
  std::shared_ptr<Connection> connection_;
  std::string wire_;
  ResponseParser parser_;
  const char* phase_ = "connecting";
  bool ended_ = false;
  bool headerDone_ = false;
  bool successful_ = false;
  int status_ = 0;
  std::size_t errorBodyBytes_ = 0;
  std::chrono::steady_clock::time_point lastData_;
};

class StreamHandleImpl final : public HttpsClient::StreamHandle {
 public:
  explicit StreamHandleImpl(std::shared_ptr<StreamState> state) : state_(std::move(state)) {}
  ~StreamHandleImpl() override { state_->cancelSilently(); }
  void cancel() override { state_->cancelSilently(); }
  bool active() const override { return state_->active(); }

 private:
  std::shared_ptr<StreamState> state_;
};

}  // namespace

struct HttpsClient::Impl : std::enable_shared_from_this<HttpsClient::Impl> {
  Impl(asio::io_context& context, Options opts) : io(context), options(opts) {}

  asio::io_context& io;
  Options options;
  std::optional<BaseUrl> url;
  std::optional<std::string> configurationError;
  TlsOptions tls;
  std::shared_ptr<ssl::context> tlsContext;  // null when http:// or the TLS material is bad
  std::optional<std::string> tlsError;

  std::deque<std::shared_ptr<PendingRequest>> queue;
  std::shared_ptr<Attempt> active;
  std::shared_ptr<Connection> idle;  // the keep-alive connection while no request uses it
  std::vector<std::weak_ptr<StreamState>> streams;
  bool shutDown = false;
  bool destroyed = false;

  // Every completion goes through here: exactly once, and always from the event loop.
  void finish(const std::shared_ptr<PendingRequest>& pending, Result result) {
    if (pending->finished) return;
    pending->finished = true;
    pending->deadlineTimer.cancel();
    asio::post(io, [self = shared_from_this(), pending, result = std::move(result)]() mutable {
      auto onComplete = std::move(pending->onComplete);
      if (!self->destroyed && onComplete) onComplete(std::move(result));
    });
  }

  void submit(Request request, std::function<void(Result)> onComplete) {
    auto pending = std::make_shared<PendingRequest>(io);
    pending->request = std::move(request);
    pending->onComplete = std::move(onComplete);
    if (shutDown) return finish(pending, Error{Kind::Cancelled, "client is shut down"});
    if (!url) return finish(pending, Error{Kind::Connect, *configurationError});
    if (auto problem = serializeRequest(pending->request, *url, pending->wire)) {
      return finish(pending, Error{Kind::Protocol, *problem});
    }
    pending->deadlineTimer.expires_after(pending->request.deadline);
    pending->deadlineTimer.async_wait([weak = weak_from_this(), pending](const error_code& ec) {
      auto self = weak.lock();
      if (ec || !self || pending->finished) return;
      self->onDeadline(pending);
    });
    queue.push_back(std::move(pending));
    pump();
  }

  void pump() {
    if (active || queue.empty() || shutDown) return;
    auto next = std::move(queue.front());
    queue.pop_front();
    startAttempt(std::move(next), /*allowReuse=*/true);
  }

  bool isCurrent(const std::shared_ptr<Attempt>& attempt) const {
    return !destroyed && active == attempt && !attempt->pending->finished;
  }

  void startAttempt(std::shared_ptr<PendingRequest> pending, bool allowReuse) {
    if (url->tls && !tlsContext) {
      finish(pending, Error{Kind::Tls, *tlsError});
      return pump();
    }
    auto attempt = std::make_shared<Attempt>();
    attempt->pending = std::move(pending);
    active = attempt;
    if (allowReuse && idle && idle->isOpen()) {
      attempt->connection = std::move(idle);
      attempt->reusedConnection = true;
      idle.reset();
      return send(attempt);
    }
    if (idle) {
      idle->close();
      idle.reset();
    }
    attempt->connection = std::make_shared<Connection>(io, *url, tlsContext, tls, options.resolver);
    attempt->connection->open([self = shared_from_this(), attempt](std::optional<Error> error) {
      if (!self->isCurrent(attempt)) return;
      if (error) return self->fail(attempt, std::move(*error));
      self->send(attempt);
    });
  }

  void send(const std::shared_ptr<Attempt>& attempt) {
    attempt->phase = "sending the request";
    attempt->connection->write(attempt->pending->wire,
                               [self = shared_from_this(), attempt](const error_code& ec) {
                                 if (!self->isCurrent(attempt)) return;
                                 if (ec) return self->failIo(attempt, ec);
                                 attempt->requestWritten = true;
                                 self->receive(attempt);
                               });
  }

  void receive(const std::shared_ptr<Attempt>& attempt) {
    attempt->phase = "waiting for the response";
    auto& parser = attempt->parser;
    parser.eager(true);
    parser.header_limit(options.maxHeaderBytes);
    parser.body_limit(options.maxResponseBytes);
    parser.expectedBodyLimit = options.maxResponseBytes;
    if (attempt->pending->request.method == "HEAD") parser.skip(true);
    attempt->connection->readMessage(parser,
                                     [self = shared_from_this(), attempt](const error_code& ec) {
                                       if (!self->isCurrent(attempt)) return;
                                       if (ec) return self->failIo(attempt, ec);
                                       self->succeed(attempt);
                                     });
  }

  void succeed(const std::shared_ptr<Attempt>& attempt) {
    auto& parser = attempt->parser;
    Response response;
    response.status = parser.status;
    response.headers = std::move(parser.headers);
    response.body = std::move(parser.body);
    const bool keepAlive = parser.keep_alive() && !shutDown;
    active.reset();
    if (keepAlive) {
      idle = attempt->connection;
    } else {
      attempt->connection->close();
    }
    finish(attempt->pending, std::move(response));
    pump();
  }

  void failIo(const std::shared_ptr<Attempt>& attempt, const error_code& ec) {
    auto& pending = attempt->pending;
    // See the retry rule in HttpsClient.h: a reused connection that turns out dead before any
    // response byte, and a request the server cannot have acted on (or may safely repeat).
    const bool retry = attempt->reusedConnection && !pending->retried && isConnectionLoss(ec) &&
                       attempt->connection->bytesRead() == 0 &&
                       (!attempt->requestWritten || isIdempotent(pending->request.method));
    attempt->connection->close();
    active.reset();
    if (retry) {
      pending->retried = true;
      return startAttempt(pending, /*allowReuse=*/false);
    }
    finish(pending, classifyIoError(ec, attempt->phase));
    pump();
  }

  void fail(const std::shared_ptr<Attempt>& attempt, Error error) {
    attempt->connection->close();
    active.reset();
    finish(attempt->pending, std::move(error));
    pump();
  }

  void onDeadline(const std::shared_ptr<PendingRequest>& pending) {
    const std::string message =
        "deadline of " + std::to_string(pending->request.deadline.count()) + " ms expired";
    if (active && active->pending == pending) {
      auto attempt = std::move(active);
      active.reset();
      attempt->connection->close();
      finish(pending, Error{Kind::Timeout, message + " while " + attempt->phase});
      return pump();
    }
    std::erase(queue, pending);
    finish(pending, Error{Kind::Timeout, message + " while queued behind other requests"});
  }

  std::shared_ptr<StreamHandle> openStream(Request request, StreamCallbacks callbacks,
                                           StreamOptions streamOptions) {
    std::erase_if(streams, [](const auto& weak) { return weak.expired(); });
    auto state =
        std::make_shared<StreamState>(io, std::move(callbacks), streamOptions, request.deadline);
    auto handle = std::make_shared<StreamHandleImpl>(state);
    auto stillWanted = [weak = weak_from_this()] {
      auto self = weak.lock();
      return self && !self->destroyed;
    };
    std::string wire;
    std::optional<Error> problem;
    if (shutDown) {
      problem = Error{Kind::Cancelled, "client is shut down"};
    } else if (!url) {
      problem = Error{Kind::Connect, *configurationError};
    } else if (url->tls && !tlsContext) {
      problem = Error{Kind::Tls, *tlsError};
    } else if (auto invalid = serializeRequest(request, *url, wire)) {
      problem = Error{Kind::Protocol, *invalid};
    }
    if (problem) {
      state->endLater(io, std::move(*problem), stillWanted);
      return handle;
    }
    streams.push_back(state);
    state->start(std::make_shared<Connection>(io, *url, tlsContext, tls, options.resolver),
                 std::move(wire));
    return handle;
  }

  void closeAll(bool notify) {
    shutDown = true;
    auto stillWanted = [weak = weak_from_this()] {
      auto self = weak.lock();
      return self && !self->destroyed;
    };
    if (idle) {
      idle->close();
      idle.reset();
    }
    if (active) {
      auto attempt = std::move(active);
      active.reset();
      attempt->connection->close();
      queue.push_front(attempt->pending);
    }
    for (auto& pending : queue) {
      if (!notify) pending->onComplete = nullptr;
      finish(pending, Error{Kind::Cancelled, "client shut down"});
    }
    queue.clear();
    for (auto& weak : streams) {
      if (auto state = weak.lock()) {
        if (notify) {
          state->endLater(io, Error{Kind::Cancelled, "client shut down"}, stillWanted);
        } else {
          state->cancelSilently();
        }
      }
    }
    streams.clear();
  }
};

const char* HttpsClient::kindName(Error::Kind kind) {
  switch (kind) {
    case Kind::Timeout:
      return "Timeout";
    case Kind::Connect:
      return "Connect";
    case Kind::Tls:
      return "Tls";
    case Kind::Protocol:
      return "Protocol";
    case Kind::TooLarge:
      return "TooLarge";
    case Kind::Cancelled:
      return "Cancelled";
    case Kind::Closed:
      return "Closed";
  }
  return "Unknown";
}

HttpsClient::HttpsClient(boost::asio::io_context& io, std::string baseUrl, TlsOptions tls,
                         Options options)
    : impl_(std::make_shared<Impl>(io, options)) {
  std::string error;
  impl_->url = BaseUrl::parse(baseUrl, &error);
  if (!impl_->url) {
    impl_->configurationError = error;
    return;
  }
  if (impl_->url->tls) {
    if (auto problem = setTls(std::move(tls))) {
      impl_->tlsError = "TLS configuration: " + *problem;
      impl_->configurationError = impl_->tlsError;
    }
  }
}

HttpsClient::~HttpsClient() {
  impl_->destroyed = true;
  impl_->closeAll(/*notify=*/false);
}

HttpsClient::HttpsClient(boost::asio::io_context& io, std::string baseUrl, TlsOptions tls)
    : HttpsClient(io, std::move(baseUrl), std::move(tls), Options{}) {}

const std::optional<std::string>& HttpsClient::configurationError() const {
  return impl_->configurationError;
}

void HttpsClient::request(Request request, std::function<void(Result)> onComplete) {
  impl_->submit(std::move(request), std::move(onComplete));
}

std::shared_ptr<HttpsClient::StreamHandle> HttpsClient::stream(Request request,
                                                               StreamCallbacks callbacks,
                                                               StreamOptions options) {
  return impl_->openStream(std::move(request), std::move(callbacks), options);
}

std::optional<std::string> HttpsClient::setTls(TlsOptions tls) {
  auto created = TlsClientContext::create(tls);
  if (auto* problem = std::get_if<std::string>(&created)) return *problem;
  impl_->tls = std::move(tls);
  impl_->tlsContext = std::get<std::shared_ptr<ssl::context>>(std::move(created));
  impl_->tlsError.reset();
  if (impl_->url) impl_->configurationError.reset();
  return std::nullopt;
}

std::shared_ptr<HttpsClient::StreamHandle> HttpsClient::stream(Request request,
                                                               StreamCallbacks callbacks) {
  return stream(std::move(request), std::move(callbacks), StreamOptions{});
}

void HttpsClient::closeIdle() {
  if (impl_->idle) {
    impl_->idle->close();
    impl_->idle.reset();
  }
}

void HttpsClient::shutdown() {
  impl_->closeAll(/*notify=*/true);
}

}  // namespace leasehold::net

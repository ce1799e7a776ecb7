// The status API's and the probes' HTTP/1.1 server (contract in HttpServer.h). Why ~650 lines:
// the request parser, the connection's strict in-order state machine (keep-alive, pipelining,
// limits, idle sweep) and the event-stream connections share one connection object and its
// buffers; EventStream and HttpHeaders are already separate.
#include "net/HttpServer.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <charconv>
#include <list>

namespace leasehold::net {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kReadChunkBytes = 8 * 1024;
// After an error response we read and discard what the client still sends (so that closing does
// not turn into a TCP reset that destroys our response), but only this much and this long.
constexpr std::size_t kMaxDrainBytes = 256 * 1024;
constexpr auto kDrainTimeout = std::chrono::seconds(2);

std::string_view toStd(boost::beast::string_view s) {
  return {s.data(), s.size()};
}

const char* reasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Content Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

bool bodyAllowed(int status) {
  return status >= 200 && status != 204 && status != 304;
}

// Fills a ServerRequest that is reused across requests of a connection, so that its strings keep
// their capacity and a steady stream of requests allocates (almost) nothing.
class RequestParser final : public http::basic_parser<true> {
 public:
  explicit RequestParser(ServerRequest& request) : request_(request) {}

 private:
  void on_request_impl(http::verb, boost::beast::string_view method,
                       boost::beast::string_view target, int, error_code&) override {
    request_.method.assign(method.data(), method.size());
    request_.target.assign(target.data(), target.size());
  }
  void on_response_impl(int, boost::beast::string_view, int, error_code&) override {}
  void on_field_impl(http::field, boost::beast::string_view name, boost::beast::string_view value,
                     error_code&) override {
    request_.headers.add(std::string(toStd(name)), std::string(toStd(value)));
  }
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override {
    if (length) request_.body.reserve(*length);  // already checked against body_limit
  }
  std::size_t on_body_impl(boost::beast::string_view bytes, error_code&) override {
    request_.body.append(bytes.data(), bytes.size());
    return bytes.size();
  }
  void on_chunk_header_impl(std::uint64_t, boost::beast::string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view bytes,
                                 error_code&) override {
    request_.body.append(bytes.data(), bytes.size());
    return bytes.size();
  }
  void on_finish_impl(error_code&) override {}

  ServerRequest& request_;
};

class ServerConnection;

struct Route {
  std::string path;
  std::vector<std::pair<std::string, HttpServer::Handler>> methods;
  HttpServer::EventStreamOpened onEventStream;  // set for event-stream routes
  std::string allow;                            // "GET, HEAD, POST" for 405 answers
};

}  // namespace

namespace detail {

struct HttpServerState : std::enable_shared_from_this<HttpServerState> {
  using Options = HttpServer::Options;
  HttpServerState(asio::io_context& context, Options opts)
      : io(context), options(std::move(opts)), acceptor(context), sweepTimer(context) {}

  asio::io_context& io;
  Options options;
  tcp::acceptor acceptor;
  asio::steady_timer sweepTimer;
  std::uint16_t boundPort = 0;
  std::vector<Route> routes;
  std::list<std::weak_ptr<ServerConnection>> connections;
  std::size_t eventStreams = 0;
  bool sweepArmed = false;
  bool stopping = false;
  bool destroyed = false;

  const Route* findRoute(std::string_view path) const {
    for (const auto& route : routes) {
      if (route.path == path) return &route;
    }
    return nullptr;
  }
  Route& routeFor(std::string path) {
    for (auto& route : routes) {
      if (route.path == path) return route;
    }
    routes.push_back(Route{std::move(path), {}, {}, {}});
    return routes.back();
  }

  void accept();
  void scheduleSweep();
  void sweep();
  void stopAll(bool immediately);
};

}  // namespace detail
using detail::HttpServerState;

namespace {

class ServerEventStream;

class ServerConnection : public std::enable_shared_from_this<ServerConnection> {
 public:
  ServerConnection(std::shared_ptr<HttpServerState> server, tcp::socket socket)
      : server_(std::move(server)), socket_(std::move(socket)), lastActivity_(Clock::now()) {}

  ~ServerConnection() {
    if (registered_) server_->connections.erase(self_);
  }

  void start(std::list<std::weak_ptr<ServerConnection>>::iterator self) {
    self_ = self;
    registered_ = true;
    error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    readRequest();
  }

  // Called by the server's sweep timer.
  void closeIfIdle(Clock::time_point now) {
    if (phase_ == Phase::Reading && now - lastActivity_ >= server_->options.idleTimeout) close();
  }

  // Graceful stop: let a response being written finish, close everything else.
  void stopGracefully() {
    if (phase_ == Phase::Writing || phase_ == Phase::Handling) {
      closeAfterWrite_ = true;
    } else {
      close();
    }
  }

  void close();

  // Event-stream output (used by ServerEventStream).
  bool queueStreamBytes(std::size_t size, const std::function<void(std::string&)>& append);
  bool streamClosed() const { return phase_ == Phase::Closed; }
  void setStreamCloseCallback(std::function<void()> callback);

 private:
  enum class Phase { Reading, Handling, Writing, Draining, Streaming, Closed };

  void readRequest() {
    phase_ = Phase::Reading;
    if (!parser_) {
      request_.headers.clear();
      request_.body.clear();
      parser_.emplace(request_);
      parser_->header_limit(static_cast<std::uint32_t>(server_->options.maxHeaderBytes));
      parser_->body_limit(server_->options.maxBodyBytes);
      parser_->eager(true);
    }
    // Pipelined requests may already be buffered: parse before reading more.
    while (buffer_.size() > 0) {
      error_code ec;
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more) break;
      if (ec) return rejectMalformed(ec);
      if (parser_->is_done()) return handleRequest();
      if (used == 0) break;
    }
    socket_.async_read_some(buffer_.prepare(kReadChunkBytes),
                            [self = shared_from_this()](const error_code& ec, std::size_t n) {
                              if (ec || self->phase_ == Phase::Closed) return self->close();
                              self->buffer_.commit(n);
                              self->lastActivity_ = Clock::now();
                              self->readRequest();
                            });
  }

  void rejectMalformed(const error_code& ec) {
    int status = 400;
    if (ec == http::error::header_limit) status = 431;
    if (ec == http::error::body_limit) status = 413;
    ServerResponse response;
    response.status = status;
    response.body = std::string(reasonPhrase(status)) + "\n";
    writeResponse(response, /*keepAlive=*/false, /*includeBody=*/true);
  }

  void handleRequest() {
    phase_ = Phase::Handling;
    const bool keepAlive = parser_->keep_alive();
    parser_.reset();
    const auto question = request_.target.find('?');
    if (question == std::string::npos) {
      request_.path.assign(request_.target);
      request_.query.clear();
    } else {
      request_.path.assign(request_.target, 0, question);
      request_.query.assign(request_.target, question + 1);
    }
    const Route* route = server_->findRoute(request_.path);
    if (route && route->onEventStream && request_.method == "GET") return startEventStream(*route);

    const HttpServer::Handler* handler = nullptr;
    bool head = false;
    if (route) {
      for (const auto& [method, candidate] : route->methods) {
        if (method == request_.method) handler = &candidate;
      }
      if (!handler && request_.method == "HEAD") {
        for (const auto& [method, candidate] : route->methods) {
          if (method == "GET") handler = &candidate;
        }
        head = handler != nullptr;
      }
    }
    if (!handler) {
      ServerResponse response;
      if (!route) {
        response.status = 404;
        response.body = "Not Found\n";
      } else {
        response.status = 405;
        response.body = "Method Not Allowed\n";
        response.headers.emplace_back("Allow", route->allow);
      }
      return writeResponse(response, keepAlive, !head);
    }
    ServerResponse response;
    try {
      response = (*handler)(request_);
    } catch (const std::exception&) {
      response = ServerResponse{};
      response.status = 500;
      response.body = "Internal Server Error\n";
    }
    // The handler may have stopped or destroyed the server.
    if (phase_ == Phase::Closed) return;
    writeResponse(response, keepAlive && !server_->stopping, !head);
  }

  void writeResponse(const ServerResponse& response, bool keepAlive, bool includeBody) {
    out_.clear();
    out_.append("HTTP/1.1 ");
    char digits[8];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, response.status);
    (void)ec;
    out_.append(digits, end).append(" ").append(reasonPhrase(response.status)).append("\r\n");
    if (bodyAllowed(response.status)) {
      if (!response.contentType.empty()) {
        out_.append("Content-Type: ").append(response.contentType).append("\r\n");
      }
      const auto [lengthEnd, lengthEc] =
          std::to_chars(digits, digits + sizeof digits, response.body.size());
      (void)lengthEc;
      out_.append("Content-Length: ").append(digits, lengthEnd).append("\r\n");
    }
    if (!keepAlive) out_.append("Connection: close\r\n");
    for (const auto& [name, value] : response.headers) {
      // Never let a handler's value split the header block.
      if (name.find_first_of(":\r\n") != std::string::npos ||
          value.find_first_of("\r\n") != std::string::npos) {
        continue;
      }
      out_.append(name).append(": ").append(value).append("\r\n");
    }
    out_.append("\r\n");
    if (includeBody && bodyAllowed(response.status)) out_.append(response.body);
    closeAfterWrite_ = closeAfterWrite_ || !keepAlive;
    phase_ = Phase::Writing;
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this()](const error_code& ec, std::size_t) {
                        if (ec || self->phase_ == Phase::Closed) return self->close();
                        self->lastActivity_ = Clock::now();
                        if (self->closeAfterWrite_ || self->server_->stopping) {
                          return self->drainAndClose();
                        }
                        self->readRequest();
                      });
  }

  // Half-close, then swallow whatever the client still sends until it closes too.
  void drainAndClose() {
    phase_ = Phase::Draining;
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    buffer_.clear();
    // Own timer, not the sweep: the sweep no longer runs once the server is stopping.
    drainTimer_.emplace(socket_.get_executor(), kDrainTimeout);
    drainTimer_->async_wait([self = shared_from_this()](const error_code& ec) {
      if (!ec) self->close();
    });
    drain();
  }

  void drain() {
    socket_.async_read_some(
        buffer_.prepare(kReadChunkBytes),
        [self = shared_from_this()](const error_code& ec, std::size_t n) {
          self->drained_ += n;
          if (ec || self->drained_ > kMaxDrainBytes || self->phase_ != Phase::Draining) {
            return self->close();
          }
          self->drain();
        });
  }

  void startEventStream(const Route& route);
  void readWhileStreaming();
  void flushStream();

  std::shared_ptr<HttpServerState> server_;
  tcp::socket socket_;
  std::list<std::weak_ptr<ServerConnection>>::iterator self_;
  bool registered_ = false;
  Phase phase_ = Phase::Reading;
  Clock::time_point lastActivity_;
  boost::beast::flat_buffer buffer_;
  ServerRequest request_;
  std::optional<RequestParser> parser_;
  std::string out_;  // bytes being written
  bool closeAfterWrite_ = false;
  std::size_t drained_ = 0;
  std::optional<asio::steady_timer> drainTimer_;

  // Event-stream state.
  std::string streamPending_;  // queued but not yet handed to the socket
  bool streamWriting_ = false;
  std::function<void()> onStreamClose_;
  char discard_[512];
};

class ServerEventStream final : public EventStream {
 public:
  explicit ServerEventStream(std::weak_ptr<ServerConnection> connection)
      : connection_(std::move(connection)) {}

  bool send(std::string_view data) override {
    auto connection = connection_.lock();
    if (!connection) return false;
    return connection->queueStreamBytes(eventSize(data),
                                        [&](std::string& out) { appendEvent(out, data); });
  }
  bool comment(std::string_view text) override {
    auto connection = connection_.lock();
    if (!connection) return false;
    return connection->queueStreamBytes(commentSize(text),
                                        [&](std::string& out) { appendComment(out, text); });
  }
  bool closed() const override {
    auto connection = connection_.lock();
    return !connection || connection->streamClosed();
  }
  void close() override {
    if (auto connection = connection_.lock()) connection->close();
  }
  void onClose(std::function<void()> callback) override {
    auto connection = connection_.lock();
    if (!connection || connection->streamClosed()) {
      if (callback) callback();
      return;
    }
    connection->setStreamCloseCallback(std::move(callback));
  }

 private:
  std::weak_ptr<ServerConnection> connection_;
};

void ServerConnection::close() {
  if (phase_ == Phase::Closed) return;
  const bool wasStreaming = phase_ == Phase::Streaming;
  phase_ = Phase::Closed;
  error_code ignored;
  socket_.close(ignored);
  if (drainTimer_) drainTimer_->cancel();
  if (wasStreaming) {
    --server_->eventStreams;
    streamPending_.clear();
    if (auto callback = std::move(onStreamClose_)) {
      onStreamClose_ = nullptr;
      // Posted: close() can happen inside the application's own send() (buffer overflow), where
      // a synchronous callback could invalidate the application's iteration over its streams.
      asio::post(socket_.get_executor(), [server = server_, callback = std::move(callback)] {
        if (!server->destroyed) callback();
      });
    }
  }
}

void ServerConnection::startEventStream(const Route& route) {
  phase_ = Phase::Streaming;
  ++server_->eventStreams;
  streamPending_.assign(
      "HTTP/1.1 200 OK\r\n"
      "Content-Type: text/event-stream\r\n"
      "Cache-Control: no-cache\r\n"
      "Connection: close\r\n"
      "X-Accel-Buffering: no\r\n"
      "\r\n");
  auto onOpen = route.onEventStream;  // copy: the handler may change the routes
  auto stream = std::make_shared<ServerEventStream>(weak_from_this());
  flushStream();
  readWhileStreaming();
  try {
    onOpen(stream);
  } catch (const std::exception&) {
    close();
  }
}

void ServerConnection::readWhileStreaming() {
  // The client has nothing more to say; reading only tells us when it goes away.
  socket_.async_read_some(asio::buffer(discard_),
                          [self = shared_from_this()](const error_code& ec, std::size_t) {
                            if (ec || self->phase_ != Phase::Streaming) return self->close();
                            self->readWhileStreaming();
                          });
}

bool ServerConnection::queueStreamBytes(std::size_t size,
                                        const std::function<void(std::string&)>& append) {
  if (phase_ != Phase::Streaming) return false;
  const std::size_t inFlight = streamWriting_ ? out_.size() : 0;
  if (inFlight + streamPending_.size() + size > server_->options.eventStreamBufferBytes) {
    close();  // too slow a reader: drop it rather than buffer without bound
    return false;
  }
  append(streamPending_);
  flushStream();
  return true;
}

void ServerConnection::setStreamCloseCallback(std::function<void()> callback) {
  onStreamClose_ = std::move(callback);
}

void ServerConnection::flushStream() {
  if (streamWriting_ || streamPending_.empty() || phase_ != Phase::Streaming) return;
  out_.clear();
  out_.swap(streamPending_);
  streamWriting_ = true;
  asio::async_write(socket_, asio::buffer(out_),
                    [self = shared_from_this()](const error_code& ec, std::size_t) {
                      self->streamWriting_ = false;
                      if (ec || self->phase_ != Phase::Streaming) return self->close();
                      self->flushStream();
                    });
}

}  // namespace

void HttpServerState::accept() {
  acceptor.async_accept([self = shared_from_this()](const error_code& ec, tcp::socket socket) {
    if (self->stopping || ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors and the like: try again shortly instead of spinning.
      auto retry = std::make_shared<asio::steady_timer>(self->io, std::chrono::milliseconds(50));
      retry->async_wait([self, retry](const error_code& waitError) {
        if (!waitError && !self->stopping) self->accept();
      });
      return;
    }
    if (self->connections.size() >= self->options.maxConnections) {
      error_code ignored;
      socket.close(ignored);
    } else {
      auto connection = std::make_shared<ServerConnection>(self, std::move(socket));
      self->connections.push_front(connection);
      connection->start(self->connections.begin());
      self->scheduleSweep();
    }
    self->accept();
  });
}

// The sweep runs only while there are connections: an idle sidecar (no client connected, the
// usual state of a probe server between kubelet probes) does not wake up once a second for it.
void HttpServerState::scheduleSweep() {
  if (sweepArmed || stopping || connections.empty()) return;
  sweepArmed = true;
  const auto period = std::min<Clock::duration>(std::chrono::seconds(1), options.idleTimeout);
  sweepTimer.expires_after(std::max<Clock::duration>(period, std::chrono::milliseconds(100)));
  sweepTimer.async_wait([weak = weak_from_this()](const error_code& ec) {
    auto self = weak.lock();
    if (!self) return;
    self->sweepArmed = false;
    if (self->stopping) return;
    if (!ec) self->sweep();
    self->scheduleSweep();
  });
}

void HttpServerState::sweep() {
  const auto now = Clock::now();
  // Copy first: closing a connection can destroy it, which edits the list.
  std::vector<std::shared_ptr<ServerConnection>> alive;
  alive.reserve(connections.size());
  for (auto& weak : connections) {
    if (auto connection = weak.lock()) alive.push_back(std::move(connection));
  }
  for (auto& connection : alive)
    connection->closeIfIdle(now);
}

void HttpServerState::stopAll(bool immediately) {
  stopping = true;
  error_code ignored;
  acceptor.close(ignored);
  sweepTimer.cancel();
  std::vector<std::shared_ptr<ServerConnection>> alive;
  for (auto& weak : connections) {
    if (auto connection = weak.lock()) alive.push_back(std::move(connection));
  }
  for (auto& connection : alive) {
    if (immediately) {
      connection->close();
    } else {
      connection->stopGracefully();
    }
  }
}

HttpServer::HttpServer(boost::asio::io_context& io, Options options)
    : state_(std::make_shared<HttpServerState>(io, std::move(options))) {}

HttpServer::~HttpServer() {
  state_->destroyed = true;
  state_->stopAll(/*immediately=*/true);
  state_->routes.clear();
}

std::optional<std::string> HttpServer::listen() {
  auto& s = *state_;
  std::string host = s.options.address;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string where = host.find(':') != std::string::npos
                                ? "[" + host + "]:" + std::to_string(s.options.port)
                                : host + ":" + std::to_string(s.options.port);
  error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return "invalid listen address " + where + ": " + ec.message();
  const tcp::endpoint endpoint(address, s.options.port);
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error_code ignored;
    s.acceptor.close(ignored);
    return "cannot listen on " + where + ": " + ec.message();
  }
  s.boundPort = s.acceptor.local_endpoint(ec).port();
  s.stopping = false;
  s.accept();
  return std::nullopt;
}

std::uint16_t HttpServer::port() const {
  return state_->boundPort;
}

void HttpServer::route(std::string method, std::string path, Handler handler) {
  Route& route = state_->routeFor(std::move(path));
  route.onEventStream = nullptr;
  bool replaced = false;
  for (auto& [existing, existingHandler] : route.methods) {
    if (existing == method) {
      existingHandler = std::move(handler);
      replaced = true;
    }
  }
  if (!replaced) route.methods.emplace_back(std::move(method), std::move(handler));
  route.allow.clear();
  bool hasGet = false, hasHead = false;
  for (const auto& [name, unused] : route.methods) {
    if (!route.allow.empty()) route.allow.append(", ");
    route.allow.append(name);
    hasGet = hasGet || name == "GET";
    hasHead = hasHead || name == "HEAD";
  }
  if (hasGet && !hasHead) route.allow.append(", HEAD");
}

void HttpServer::routeEvents(std::string path, EventStreamOpened onOpen) {
  Route& route = state_->routeFor(std::move(path));
  route.methods.clear();
  route.onEventStream = std::move(onOpen);
  route.allow = "GET";
}

void HttpServer::stop() {
  state_->stopAll(/*immediately=*/false);
}

std::size_t HttpServer::connectionCount() const {
  return state_->connections.size();
}

std::size_t HttpServer::eventStreamCount() const {
  return state_->eventStreams;
}

}  // namespace leasehold::net

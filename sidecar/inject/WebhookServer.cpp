// The webhook's HTTPS server (contract in WebhookServer.h), with Beast's ssl_stream and its
// request parser: unlike net/HttpServer (plain TCP, pipelining, event streams, allocation-free
// reuse), this one serves the API server's few admission calls and needs TLS.
#include "inject/WebhookServer.h"

#include <openssl/ssl.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <list>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace leasehold::inject {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;

constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;
constexpr auto kShutdownTimeout = std::chrono::seconds(2);
// After refusing a request whose body is still arriving (413), what the client still sends is
// read and dropped, this much at most, so that closing does not reset the connection under the
// response before the client read it.
constexpr std::size_t kMaxDrainBytes = 16 * 1024 * 1024;

std::variant<std::shared_ptr<ssl::context>, std::string> serverContext(const std::string& certPem,
                                                                       const std::string& keyPem) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_compression |
                       ssl::context::single_dh_use);
  error_code ec;
  // The key first: loading a certificate that does not match it then leaves the context
  // without a key, which the check below names plainly (the other order gives OpenSSL's
  // "key values mismatch").
  context->use_private_key(asio::buffer(keyPem), ssl::context::pem, ec);
  if (ec) return "cannot load the key: " + ec.message();
  context->use_certificate_chain(asio::buffer(certPem), ec);
  if (ec) return "cannot load the certificate: " + ec.message();
  if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
    return std::string("the key does not match the certificate");
  }
  return context;
}

class Session;

}  // namespace

namespace detail {

struct WebhookServerState : std::enable_shared_from_this<WebhookServerState> {
  WebhookServerState(asio::io_context& context, WebhookServer::Options opts)
      : io(context), options(std::move(opts)), acceptor(context) {}

  asio::io_context& io;
  WebhookServer::Options options;
  tcp::acceptor acceptor;
  std::shared_ptr<ssl::context> tls;
  std::uint16_t boundPort = 0;
  std::vector<std::tuple<std::string, std::string, WebhookServer::Handler>> routes;
  std::list<std::weak_ptr<Session>> sessions;
  bool stopping = false;

  void accept();
  net::ServerResponse dispatch(const net::ServerRequest& request) const;
};

}  // namespace detail
using detail::WebhookServerState;

namespace {

net::ServerResponse plain(int status, std::string body) {
  net::ServerResponse response;
  response.status = status;
  response.body = std::move(body) + "\n";
  return response;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<WebhookServerState> server, tcp::socket socket)
      : server_(std::move(server)),
        tls_(server_->tls),
        stream_(beast::tcp_stream(std::move(socket)), *tls_) {}

  ~Session() {
    if (registered_) server_->sessions.erase(self_);
  }

  void start(std::list<std::weak_ptr<Session>>::iterator self) {
    self_ = self;
    registered_ = true;
    busy_ = true;
    beast::get_lowest_layer(stream_).expires_after(server_->options.requestTimeout);
    stream_.async_handshake(ssl::stream_base::server,
                            [self = shared_from_this()](const error_code& ec) {
                              if (ec) return self->close();
                              self->read();
                            });
  }

  // Graceful stop: an idle connection goes now, a busy one after its response.
  void stopGracefully() {
    if (busy_) {
      closeAfterWrite_ = true;
    } else {
      close();
    }
  }

 private:
  void read() {
    if (server_->stopping) return shutdown();
    busy_ = false;
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(server_->options.maxBodyBytes);
    // One deadline for the idle wait and the request together (async_read cannot tell when the
    // request starts): a slow request gets idleTimeout too, which still bounds it.
    beast::get_lowest_layer(stream_).expires_after(
        std::max(server_->options.idleTimeout, server_->options.requestTimeout));
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](const error_code& ec, std::size_t) { self->onRead(ec); });
  }

  void onRead(const error_code& ec) {
    busy_ = true;
    if (ec == http::error::end_of_stream || ec == asio::error::eof) return shutdown();
    if (ec == http::error::body_limit) {
      return respond(plain(413, "Content Too Large: the body is over " +
                                    std::to_string(server_->options.maxBodyBytes) + " bytes"),
                     false, true);
    }
    if (ec == http::error::header_limit) {
      return respond(plain(431, "Request Header Fields Too Large"), false, true);
    }
    if (ec && ec.category() == http::make_error_code(http::error::bad_target).category()) {
      return respond(plain(400, "Bad Request: " + ec.message()), false, true);
    }
    if (ec) return close();
    const auto& message = parser_->get();
    net::ServerRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    const auto question = request.target.find('?');
    request.path = request.target.substr(0, question);
    if (question != std::string::npos) request.query = request.target.substr(question + 1);
    for (const auto& field : message) {
      request.headers.add(std::string(field.name_string()), std::string(field.value()));
    }
    request.body = message.body();
    const bool keepAlive = message.keep_alive();
    net::ServerResponse response;
    try {
      response = server_->dispatch(request);
    } catch (const std::exception&) {
      response = plain(500, "Internal Server Error");
    }
    respond(std::move(response), keepAlive);
  }

  void respond(net::ServerResponse response, bool keepAlive, bool drainAfter = false) {
    keepAlive = keepAlive && !closeAfterWrite_ && !server_->stopping;
    auto out = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(response.status), 11);
    out->set(http::field::content_type, response.contentType);
    for (const auto& [name, value] : response.headers)
      out->set(name, value);
    out->body() = std::move(response.body);
    out->keep_alive(keepAlive);
    out->prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(server_->options.requestTimeout);
    http::async_write(
        stream_, *out,
        [self = shared_from_this(), out, keepAlive, drainAfter](const error_code& ec, std::size_t) {
          if (ec) return self->close();
          if (drainAfter) return self->drain(kMaxDrainBytes);
          if (keepAlive && !self->closeAfterWrite_) return self->read();
          self->shutdown();
        });
  }

  void drain(std::size_t left) {
    beast::get_lowest_layer(stream_).expires_after(kShutdownTimeout);
    stream_.async_read_some(asio::buffer(discard_),
                            [self = shared_from_this(), left](const error_code& ec, std::size_t n) {
                              if (ec || n >= left) return self->close();
                              self->drain(left - n);
                            });
  }

  void shutdown() {
    busy_ = true;
    beast::get_lowest_layer(stream_).expires_after(kShutdownTimeout);
    stream_.async_shutdown([self = shared_from_this()](const error_code&) { self->close(); });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).close();
  }

  std::shared_ptr<WebhookServerState> server_;
  std::shared_ptr<ssl::context> tls_;  // the certificate this connection started with
  beast::ssl_stream<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;
  std::array<char, 16 * 1024> discard_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::list<std::weak_ptr<Session>>::iterator self_;
  bool registered_ = false;
  bool busy_ = false;
  bool closeAfterWrite_ = false;
  bool closed_ = false;
};

}  // namespace

void WebhookServerState::accept() {
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
    if (self->sessions.size() >= self->options.maxConnections) {
      error_code ignored;
      socket.close(ignored);
    } else {
      auto session = std::make_shared<Session>(self, std::move(socket));
      self->sessions.push_front(session);
      session->start(self->sessions.begin());
    }
    self->accept();
  });
}

net::ServerResponse WebhookServerState::dispatch(const net::ServerRequest& request) const {
  std::string allow;
  for (const auto& [method, path, handler] : routes) {
    if (path != request.path) continue;
    if (method == request.method) return handler(request);
    allow += (allow.empty() ? "" : ", ") + method;
  }
  if (allow.empty()) return plain(404, "Not Found");
  auto response = plain(405, "Method Not Allowed");
  response.headers.emplace_back("Allow", allow);
  return response;
}

WebhookServer::WebhookServer(boost::asio::io_context& io, Options options)
    : state_(std::make_shared<WebhookServerState>(io, std::move(options))) {}

WebhookServer::~WebhookServer() {
  state_->stopping = true;
  error_code ignored;
  state_->acceptor.close(ignored);
  state_->routes.clear();
}

std::optional<std::string> WebhookServer::useCertificate(const std::string& certPem,
                                                         const std::string& keyPem) {
  auto context = serverContext(certPem, keyPem);
  if (auto* error = std::get_if<std::string>(&context)) return *error;
  state_->tls = std::get<std::shared_ptr<ssl::context>>(std::move(context));
  return std::nullopt;
}

std::optional<std::string> WebhookServer::listen() {
  auto& s = *state_;
  if (!s.tls) return std::string("no certificate to serve with");
  std::string host = s.options.address;
  const std::string where = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                            std::to_string(s.options.port);
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
  s.accept();
  return std::nullopt;
}

std::uint16_t WebhookServer::port() const {
  return state_->boundPort;
}

void WebhookServer::route(std::string method, std::string path, Handler handler) {
  state_->routes.emplace_back(std::move(method), std::move(path), std::move(handler));
}

void WebhookServer::stop() {
  auto& s = *state_;
  s.stopping = true;
  error_code ignored;
  s.acceptor.close(ignored);
  std::vector<std::shared_ptr<Session>> alive;
  for (auto& weak : s.sessions) {
    if (auto session = weak.lock()) alive.push_back(std::move(session));
  }
  for (auto& session : alive)
    session->stopGracefully();
}

std::size_t WebhookServer::connectionCount() const {
  return state_->sessions.size();
}

}  // namespace leasehold::inject

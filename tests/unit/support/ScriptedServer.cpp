#include "ScriptedServer.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/write.hpp>

namespace leasehold::net::test {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;

std::size_t contentLength(const std::string& head) {
  std::string lower = head;
  for (auto& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto at = lower.find("\r\ncontent-length:");
  if (at == std::string::npos) return 0;
  return std::stoul(lower.substr(at + 17));
}

}  // namespace

ScriptedConnection::ScriptedConnection(asio::io_context& io, ssl::context* tls) {
  if (tls) {
    tls_.emplace(io, *tls);
  } else {
    plain_.emplace(io);
  }
}

tcp::socket& ScriptedConnection::socket() {
  return tls_ ? tls_->next_layer() : *plain_;
}

void ScriptedConnection::start(
    std::function<void(std::shared_ptr<ScriptedConnection>, const std::string&)> onRequest) {
  onRequest_ = std::move(onRequest);
  if (!tls_) return readMore();
  tls_->async_handshake(ssl::stream_base::server,
                        [self = shared_from_this()](const error_code& ec) {
                          if (ec) {
                            self->handshakeError_ = ec.message();
                            return self->close();
                          }
                          SSL* ssl = self->tls_->native_handle();
                          if (const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name))
                            self->sni_ = name;
                          if (X509* peer = SSL_get1_peer_certificate(ssl)) {
                            char subject[256];
                            X509_NAME_oneline(X509_get_subject_name(peer), subject, sizeof subject);
                            self->clientSubject_ = subject;
                            X509_free(peer);
                          }
                          self->readMore();
                        });
}

void ScriptedConnection::readMore() {
  auto onRead = [self = shared_from_this()](const error_code& ec, std::size_t n) {
    if (ec) {
      if (self->handshakeError_.empty() && ec.category() == asio::error::get_ssl_category()) {
        self->handshakeError_ = ec.message();  // TLS 1.3 verifies client certificates late
      }
      return self->close();
    }
    self->input_.append(self->readBuffer_, n);
    self->parseRequests();
    if (!self->closed_) self->readMore();
  };
  if (tls_) {
    tls_->async_read_some(asio::buffer(readBuffer_), std::move(onRead));
  } else {
    plain_->async_read_some(asio::buffer(readBuffer_), std::move(onRead));
  }
}

void ScriptedConnection::parseRequests() {
  while (!closed_) {
    const auto headEnd = input_.find("\r\n\r\n");
    if (headEnd == std::string::npos) return;
    const std::size_t total = headEnd + 4 + contentLength(input_.substr(0, headEnd + 2));
    if (input_.size() < total) return;
    std::string request = input_.substr(0, total);
    input_.erase(0, total);
    requests_.push_back(request);
    if (onRequest_) onRequest_(shared_from_this(), request);
  }
}

void ScriptedConnection::write(std::string bytes) {
  if (closed_) return;
  output_.push_back(std::move(bytes));
  flush();
}

void ScriptedConnection::closeAfterWrites() {
  closeWhenFlushed_ = true;
  if (!writing_ && output_.empty()) close();
}

void ScriptedConnection::resetAfterWrites() {
  resetOnClose_ = true;
  closeAfterWrites();
}

void ScriptedConnection::flush() {
  if (writing_ || closed_) return;
  if (output_.empty()) {
    if (closeWhenFlushed_) close();
    return;
  }
  writing_ = true;
  auto onWritten = [self = shared_from_this()](const error_code& ec, std::size_t) {
    self->writing_ = false;
    self->output_.pop_front();
    if (ec) return self->close();
    self->flush();
  };
  if (tls_) {
    asio::async_write(*tls_, asio::buffer(output_.front()), std::move(onWritten));
  } else {
    asio::async_write(*plain_, asio::buffer(output_.front()), std::move(onWritten));
  }
}

void ScriptedConnection::close() {
  if (closed_) return;
  closed_ = true;
  error_code ignored;
  if (resetOnClose_) socket().set_option(asio::socket_base::linger(true, 0), ignored);
  socket().close(ignored);
}

ScriptedServer::ScriptedServer(asio::io_context& io, std::optional<Tls> tls, OnRequest onRequest)
    : io_(io), acceptor_(io), onRequest_(std::move(onRequest)) {
  if (tls) {
    tlsContext_.emplace(ssl::context::tls_server);
    tlsContext_->use_certificate_chain(asio::buffer(tls->certPem));
    tlsContext_->use_private_key(asio::buffer(tls->keyPem), ssl::context::pem);
    if (!tls->clientCaPem.empty()) {
      tlsContext_->add_certificate_authority(asio::buffer(tls->clientCaPem));
      tlsContext_->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    }
  }
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  acceptor_.open(endpoint.protocol());
  acceptor_.bind(endpoint);
  acceptor_.listen();
  port_ = acceptor_.local_endpoint().port();
  accept();
}

ScriptedServer::~ScriptedServer() {
  error_code ignored;
  acceptor_.close(ignored);
  for (auto& connection : connections_)
    connection->close();
}

std::string ScriptedServer::url() const {
  return std::string(tlsContext_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

void ScriptedServer::accept() {
  auto connection =
      std::make_shared<ScriptedConnection>(io_, tlsContext_ ? &*tlsContext_ : nullptr);
  acceptor_.async_accept(connection->socket(), [this, connection](const error_code& ec) {
    if (ec) return;
    ++accepts_;
    error_code ignored;
    connection->socket().set_option(tcp::no_delay(true), ignored);
    connections_.push_back(connection);
    connection->start([this](std::shared_ptr<ScriptedConnection> c, const std::string& request) {
      if (onRequest_) onRequest_(std::move(c), request);
    });
    accept();
  });
}

std::string ScriptedServer::response(int status, const std::string& body,
                                     const std::string& extraHeaders) {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extraHeaders + "\r\n" +
         body;
}

}  // namespace leasehold::net::test

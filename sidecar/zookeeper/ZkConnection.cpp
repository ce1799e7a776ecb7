#include "zookeeper/ZkConnection.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "net/HostResolver.h"
#include "net/TlsClientContext.h"
#include "zookeeper/ZkCodec.h"

namespace leasehold::zookeeper {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using boost::system::error_code;

ZkConnection::ZkConnection(asio::io_context& io, std::shared_ptr<ssl::context> tlsContext,
                           std::optional<net::TlsOptions> tlsOptions, ZkServerAddress address,
                           net::HostResolver* resolver, Handlers handlers)
    : address_(std::move(address)),
      tlsContext_(std::move(tlsContext)),
      tlsOptions_(std::move(tlsOptions)),
      resolver_(resolver),
      handlers_(std::move(handlers)) {
  if (tlsContext_) {
    tls_.emplace(io, *tlsContext_);
  } else {
    plain_.emplace(io);
  }
}

ZkConnection::tcp::socket& ZkConnection::socket() {
  return tls_ ? tls_->next_layer() : *plain_;
}

void ZkConnection::open(std::string first) {
  send(std::move(first));  // queued until connected
  error_code ec;
  const auto ip = asio::ip::make_address(address_.host, ec);
  if (!ec) {
    // Later, from the loop, like every other outcome.
    return asio::post(socket().get_executor(), [self = shared_from_this(), ip] {
      if (!self->closed_) self->connectTo({tcp::endpoint(ip, self->address_.port)});
    });
  }
  if (!resolver_) {
    return asio::post(socket().get_executor(), [self = shared_from_this()] {
      self->fail("cannot resolve " + self->address_.host + ": no host resolver configured");
    });
  }
  resolver_->resolve(
      address_.host, address_.port, abandoned_,
      [self = shared_from_this()](net::HostResolver::Answer answer) {
        if (self->closed_) return;
        if (answer.problem) {
          return self->fail("cannot resolve " + self->address_.host + ": " + *answer.problem);
        }
        std::vector<tcp::endpoint> endpoints;
        for (const auto& text : answer.addresses) {
          error_code bad;
          const auto ip = asio::ip::make_address(text, bad);
          if (!bad) endpoints.emplace_back(ip, self->address_.port);
        }
        if (endpoints.empty()) {
          return self->fail("cannot resolve " + self->address_.host + ": no usable address");
        }
        self->connectTo(std::move(endpoints));
      });
}

void ZkConnection::send(std::string bytes) {
  if (closed_) return;
  out_.push_back(std::move(bytes));
  flush();
}

void ZkConnection::close() {
  if (closed_) return;
  closed_ = true;
  abandoned_->store(true);
  error_code ignored;
  socket().close(ignored);
}

void ZkConnection::fail(const std::string& why) {
  if (closed_) return;
  auto failed = handlers_.failed;  // the handler may drop the last reference to the handlers
  close();
  failed(why);
}

void ZkConnection::connectTo(std::vector<tcp::endpoint> endpoints) {
  asio::async_connect(
      socket(), endpoints, [self = shared_from_this()](const error_code& ec, const tcp::endpoint&) {
        if (self->closed_) return;
        if (ec) {
          return self->fail("cannot connect to " + self->address_.text() + ": " + ec.message());
        }
        error_code ignored;
        self->socket().set_option(tcp::no_delay(true), ignored);
        if (!self->tls_) return self->connected();
        self->handshake();
      });
}

void ZkConnection::handshake() {
  SSL* ssl = tls_->native_handle();
  if (auto problem = net::TlsClientContext::prepareSession(ssl, *tlsOptions_, address_.host)) {
    return fail("TLS to " + address_.text() + ": " + *problem);
  }
  tls_->async_handshake(
      ssl::stream_base::client, [self = shared_from_this()](const error_code& ec) {
        if (self->closed_) return;
        if (ec) {
          return self->fail("TLS handshake with " + self->address_.text() + " failed: " +
                            net::TlsClientContext::describeHandshakeFailure(
                                self->tls_->native_handle(), ec.message()));
        }
        self->connected();
      });
}

void ZkConnection::connected() {
  connected_ = true;
  flush();
  read();
}

void ZkConnection::flush() {
  if (!connected_ || writing_ || out_.empty() || closed_) return;
  writing_ = true;
  auto onWritten = [self = shared_from_this()](const error_code& ec, std::size_t) {
    self->writing_ = false;
    if (self->closed_) return;
    if (ec) return self->fail("writing to " + self->address_.text() + ": " + ec.message());
    self->out_.pop_front();
    self->flush();
  };
  if (tls_) {
    asio::async_write(*tls_, asio::buffer(out_.front()), std::move(onWritten));
  } else {
    asio::async_write(*plain_, asio::buffer(out_.front()), std::move(onWritten));
  }
}

void ZkConnection::read() {
  auto onRead = [self = shared_from_this()](const error_code& ec, std::size_t n) {
    if (self->closed_) return;
    if (ec) {
      return self->fail(ec == asio::error::eof
                            ? self->address_.text() + " closed the connection"
                            : "reading from " + self->address_.text() + ": " + ec.message());
    }
    self->in_.append(self->chunk_, n);
    self->deliverFrames();
    if (!self->closed_) self->read();
  };
  if (tls_) {
    tls_->async_read_some(asio::buffer(chunk_), std::move(onRead));
  } else {
    plain_->async_read_some(asio::buffer(chunk_), std::move(onRead));
  }
}

void ZkConnection::deliverFrames() {
  auto self = shared_from_this();  // a handler may drop the session's reference
  std::size_t used = 0;
  while (!closed_) {
    const FrameScan scan = scanFrame(std::string_view(in_).substr(used));
    if (scan.kind == FrameScan::Kind::kNeedMore) break;
    if (scan.kind == FrameScan::Kind::kMalformed) {
      return fail("malformed frame from " + address_.text() + ": " + scan.error);
    }
    const std::string payload = in_.substr(used + 4, scan.payloadBytes);
    used += 4 + scan.payloadBytes;
    handlers_.frame(payload);
  }
  if (!closed_) in_.erase(0, used);
}

}  // namespace leasehold::zookeeper

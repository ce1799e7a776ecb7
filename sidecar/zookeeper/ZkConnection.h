#pragma once
// One TCP (or TLS) connection to one ZooKeeper server, for ZkSession: resolve (through the
// HostResolver, never asio's resolver), connect, the TLS handshake with verification, then
// length-prefixed frames both ways. It knows nothing of sessions or requests.
//
// Handlers run on the loop, never inside a call; `failed` at most once, and after close()
// (by either side) none runs. A handler may close the connection or drop the last reference
// to it.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "net/TlsOptions.h"
#include "zookeeper/ZkConnectString.h"

namespace leasehold::net {
class HostResolver;
}

namespace leasehold::zookeeper {

class ZkConnection : public std::enable_shared_from_this<ZkConnection> {
 public:
  struct Handlers {
    std::function<void(std::string_view payload)> frame;  // one whole frame, without its length
    std::function<void(const std::string& why)> failed;   // ends the connection
  };

  // tlsContext: null for plain TCP; else TLS verified per tlsOptions (the name checked is the
  // address's host unless tlsOptions.serverName says otherwise). resolver: not owned, may be
  // null (then only IP literals work); it must outlive the connection.
  ZkConnection(boost::asio::io_context& io, std::shared_ptr<boost::asio::ssl::context> tlsContext,
               std::optional<net::TlsOptions> tlsOptions, ZkServerAddress address,
               net::HostResolver* resolver, Handlers handlers);

  const ZkServerAddress& address() const { return address_; }

  // Resolves, connects, does the TLS handshake, then sends `first` and reads frames.
  void open(std::string first);
  // Queues bytes (whole frames); they go out once connected, in order.
  void send(std::string bytes);
  void close();

 private:
  using tcp = boost::asio::ip::tcp;
  tcp::socket& socket();
  void fail(const std::string& why);
  void connectTo(std::vector<tcp::endpoint> endpoints);
  void handshake();
  void connected();
  void flush();
  void read();
  void deliverFrames();

  ZkServerAddress address_;
  std::shared_ptr<boost::asio::ssl::context> tlsContext_;  // alive as long as the stream
  std::optional<net::TlsOptions> tlsOptions_;
  net::HostResolver* resolver_;
  Handlers handlers_;
  std::shared_ptr<std::atomic<bool>> abandoned_ = std::make_shared<std::atomic<bool>>(false);
  std::optional<boost::asio::ssl::stream<tcp::socket>> tls_;
  std::optional<tcp::socket> plain_;
  std::deque<std::string> out_;
  std::string in_;
  char chunk_[16 * 1024];
  bool connected_ = false;
  bool writing_ = false;
  bool closed_ = false;
};

}  // namespace leasehold::zookeeper

#pragma once
// The status API the main container reads (default 127.0.0.1:4040): GET /leader.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "election/Leadership.h"
#include "net/HttpServer.h"
#include "publish/LeadershipJson.h"

namespace leasehold::publish {

class StatusServer {
 public:
  // leadership is called on every request: the answer is computed when asked, never cached.
  StatusServer(boost::asio::io_context& io, net::HttpServer::Options options, LeaseName lease,
               std::function<election::Leadership()> leadership);

  std::optional<std::string> listen() { return server_.listen(); }
  std::uint16_t port() const { return server_.port(); }
  net::HttpServer& http() { return server_; }
  void stop() { server_.stop(); }

 private:
  net::HttpServer server_;
  LeaseName lease_;
  std::function<election::Leadership()> leadership_;
};

}  // namespace leasehold::publish

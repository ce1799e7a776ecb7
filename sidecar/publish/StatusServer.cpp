#include "publish/StatusServer.h"

namespace leasehold::publish {

StatusServer::StatusServer(boost::asio::io_context& io, net::HttpServer::Options options,
                           LeaseName lease, std::function<election::Leadership()> leadership)
    : server_(io, std::move(options)),
      lease_(std::move(lease)),
      leadership_(std::move(leadership)) {
  server_.route("GET", "/leader", [this](const net::ServerRequest&) {
    net::ServerResponse r;
    r.contentType = "application/json";
    r.body = leadershipJson(leadership_(), lease_);
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  });
}

}  // namespace leasehold::publish

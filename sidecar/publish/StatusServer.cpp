#include "publish/StatusServer.h"

namespace leasehold::publish {

StatusServer::StatusServer(boost::asio::io_context& io, net::HttpServer::Options options,
                           time::Clock& clock, LeaseName lease, StatusSource source,
                           LeadershipStream::Options streamOptions)
    : lease_(std::move(lease)),
      source_(std::move(source)),
      stream_(clock, lease_, source_.leadership, streamOptions),
      server_(io, std::move(options)) {
  const auto leader = [this](const net::ServerRequest&) {
    net::ServerResponse r;
    r.contentType = "application/json";
    r.body = leadershipJson(source_.leadership(), lease_);
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  };
  const auto watch = [this](std::shared_ptr<net::EventStream> client) {
    stream_.add(std::move(client));
  };
  server_.route("GET", "/leader", leader);
  server_.routeEvents("/leader/watch", watch);
  // Where the electors people replace answer: contrib leader-elector and nais/elector on /
  // ({"name": ...}, which the same document has), nais/elector's event stream on /sse.
  server_.route("GET", "/", leader);
  server_.routeEvents("/sse", watch);
  // contrib's later /isLeader compared the name with the hostname; this is the claim itself.
  server_.route("GET", "/isLeader", [this](const net::ServerRequest&) {
    net::ServerResponse r;
    r.contentType = "application/json";
    r.body = source_.leadership().leader ? R"({"isLeader":true})" : R"({"isLeader":false})";
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  });
  server_.route("POST", "/leader/release", [this](const net::ServerRequest&) {
    const bool wasLeader = source_.leadership().leader;
    source_.release();
    net::ServerResponse r;
    r.status = 202;
    r.contentType = "application/json";
    r.body = std::string("{\"wasLeader\":") + (wasLeader ? "true" : "false") + ",\"cooldown\":\"" +
             time::formatDuration(source_.releaseCooldown) + "\"}";
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  });
}

void StatusServer::stop() {
  stream_.closeAll();
  server_.stop();
}

}  // namespace leasehold::publish

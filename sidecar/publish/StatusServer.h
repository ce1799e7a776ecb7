#pragma once
// The status API the main container reads (default 127.0.0.1:4040):
//   GET  /leader          the leadership JSON (LeadershipJson.h), computed when asked
//   GET  /leader/watch    server-sent events of the same JSON (LeadershipStream.h)
//   GET  /                the same as /leader: where contrib's leader-elector and nais/elector
//                         answer {"name": ...}, so their apps keep working (docs/migration.md)
//   GET  /sse             the same as /leader/watch (nais/elector's stream)
//   GET  /isLeader        {"isLeader":bool}, the same claim as /leader's "leader" (contrib)
//   POST /leader/release  stop claiming, release the lease if held, and stay out of the
//                         election for the release cooldown. 202 with
//                         {"wasLeader":bool,"cooldown":"15s"}: the release write itself is
//                         asynchronous, but leadership ends before the answer is sent.
// Other methods on these paths get 405 (with Allow), unknown paths 404 (net::HttpServer).
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "election/Leadership.h"
#include "net/HttpServer.h"
#include "publish/LeadershipJson.h"
#include "publish/LeadershipStream.h"
#include "time/Clock.h"

namespace leasehold::publish {

struct StatusSource {
  // Called on every request: the answer is computed when asked, never cached.
  std::function<election::Leadership()> leadership;
  // POST /leader/release: stop claiming and stay away for `cooldown`.
  std::function<void()> release;
  time::Duration releaseCooldown{};
};

class StatusServer {
 public:
  StatusServer(boost::asio::io_context& io, net::HttpServer::Options options, time::Clock& clock,
               LeaseName lease, StatusSource source, LeadershipStream::Options streamOptions = {});

  std::optional<std::string> listen() { return server_.listen(); }
  std::uint16_t port() const { return server_.port(); }
  net::HttpServer& http() { return server_; }
  // Call on every elector event: stream clients hear about what changed.
  void leadershipMayHaveChanged() { stream_.update(); }
  // Closes the stream clients and stops serving.
  void stop();

 private:
  // Declared before server_: the server (and its connections' callbacks) goes first.
  LeaseName lease_;
  StatusSource source_;
  LeadershipStream stream_;
  net::HttpServer server_;
};

}  // namespace leasehold::publish

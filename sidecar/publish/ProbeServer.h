#pragma once
// Kubelet probes and metrics (default 0.0.0.0:9102):
//   /healthz  503 when the last record this process wrote still names it as holder but no
//             renewal has succeeded for D + 20 s: a stuck renew path no longer claims
//             leadership yet blocks the others until the lease expires, so the kubelet should
//             restart it. (A wedged event loop cannot answer at all; the probe timeout catches it.)
//   /readyz   200 once the API server has answered at least once.
//   /metrics  Prometheus text format.
#include <functional>
#include <optional>
#include <string>

#include "net/HttpServer.h"
#include "publish/Metrics.h"

namespace leasehold::publish {

struct ProbeInputs {
  std::function<election::Leadership()> leadership;
  // nullopt: healthy; else why not.
  std::function<std::optional<std::string>()> unhealthyReason;
  std::function<bool()> ready;
};

class ProbeServer {
 public:
  ProbeServer(boost::asio::io_context& io, net::HttpServer::Options options, const Metrics& metrics,
              ProbeInputs inputs);
  std::optional<std::string> listen() { return server_.listen(); }
  std::uint16_t port() const { return server_.port(); }
  void stop() { server_.stop(); }

 private:
  net::HttpServer server_;
  const Metrics& metrics_;
  ProbeInputs inputs_;
};

}  // namespace leasehold::publish

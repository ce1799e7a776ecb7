#pragma once
// The sidecar's two connections to the API server, shared by every Lease it serves: one for
// the Lease (renewals, reads, the watch) and one for everything else (Events, the pod label),
// so that a request stuck on the second can never queue up in front of a renewal. Both report
// every request to the metrics, and a verb that starts being refused (401/403) is logged once:
// a follower's failed reads are not logged by the elector, and refused credentials must still
// reach the operator. The server's host name is looked up on the process's BlockingWorker.
#include <map>
#include <string>
#include <utility>

#include "cluster/RestConfig.h"
#include "kube/ApiClient.h"
#include "kube/RefusalHint.h"
#include "log/Logger.h"
#include "net/WorkerHostResolver.h"
#include "publish/Metrics.h"

namespace boost::asio {
class io_context;
}

namespace leasehold::app {

class ApiConnections {
 public:
  ApiConnections(boost::asio::io_context& io, const cluster::RestConfig& rest,
                 const std::string& userAgent, publish::Metrics& metrics, const log::Logger& logger,
                 runtime::BlockingWorker& worker);
  ApiConnections(const ApiConnections&) = delete;
  ApiConnections& operator=(const ApiConnections&) = delete;

  kube::ApiClient& lease() { return lease_; }
  kube::ApiClient& side() { return side_; }
  // /readyz: whether the Lease connection has had any answer from the server yet.
  bool answered() const { return answered_; }
  void shutdown();

 private:
  void observe(kube::Connection connection, const std::string& verb, int code);

  publish::Metrics& metrics_;
  const log::Logger& logger_;
  net::WorkerHostResolver resolver_;  // before the clients, which use it
  kube::ApiClient lease_;
  kube::ApiClient side_;
  std::map<std::pair<kube::Connection, std::string>, int> lastCode_;
  bool answered_ = false;
};

}  // namespace leasehold::app

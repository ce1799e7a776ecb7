#pragma once
// What every leasehold process stands on, whichever it serves (one Lease, or a shard group):
// the one event loop, the monotonic clock on it, a random source, the metrics, the one thread
// besides the loop (runtime::BlockingWorker: status file writes and host name lookups, see
// docs/design.md) and the two API connections. Members are built in declaration order, so
// each may use the ones above it. run() drives the loop until the shutdown stops it.
#include <boost/asio/io_context.hpp>
#include <functional>
#include <random>
#include <string>

#include "app/ApiConnections.h"
#include "cluster/RestConfig.h"
#include "log/Logger.h"
#include "publish/Metrics.h"
#include "runtime/AsioClock.h"
#include "runtime/BlockingWorker.h"

namespace leasehold::app {

// What every process stands on, whichever store it uses.
struct LoopRuntime {
  explicit LoopRuntime(const log::Logger& logger);
  LoopRuntime(const LoopRuntime&) = delete;
  LoopRuntime& operator=(const LoopRuntime&) = delete;

  // A uniform draw in [0, 1) for the elector's jitter; valid while the runtime lives.
  std::function<double()> random01();
  // Runs the loop until io.stop(). Start-up code leaves the resident set at once and again
  // when start-up is over (runtime/ResidentCode.h).
  void run();

  boost::asio::io_context io{1};
  runtime::AsioClock clock{io};
  std::mt19937_64 rng{std::random_device{}()};
  publish::Metrics metrics;
  runtime::BlockingWorker worker;
};

// A process on Kubernetes: the loop and the two API connections.
struct ProcessRuntime : LoopRuntime {
  ProcessRuntime(const cluster::RestConfig& rest, const log::Logger& logger);

  ApiConnections api;
};

// A process that cannot start prints why (naming the flag) and exits with status 2.
int failToStart(const std::string& message);

}  // namespace leasehold::app

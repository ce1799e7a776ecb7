#pragma once
// The process of shard mode (--shards N): main's counterpart of the single-Lease wiring. One
// event loop with the ApiConnections, app::ShardMode, the status API (GET /shards,
// GET /shards/watch, and /leader for shard 0), the probes with the shard metrics, the status
// file with the /shards JSON, and SIGTERM/SIGINT starting ShardMode::shutdown. With `run`
// (leasehold run --shards N -- CMD) every shard's Sidecar supervises one command
// (app::ShardRunMode).
#include <optional>
#include <string>

#include "supervise/Supervisor.h"

#include "cluster/RestConfig.h"
#include "config/Config.h"
#include "log/Logger.h"

namespace leasehold::app {

struct ShardProcessInputs {
  const config::Config& config;
  const cluster::RestConfig& rest;
  std::string leaseNamespace;
  std::string podIp;
  std::optional<int> watchTimeoutSeconds;          // the test hook, when set
  std::optional<supervise::SupervisorConfig> run;  // run mode's settings, when leasehold run
};

// Runs until the shutdown completes; returns the exit status (non-zero when it could not start,
// after printing why; in run mode ShardRunMode::exitCode()).
int runShardProcess(const ShardProcessInputs& in, const log::Logger& logger);

}  // namespace leasehold::app

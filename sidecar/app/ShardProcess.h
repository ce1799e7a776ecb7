#pragma once
// Shard mode (--shards N) on Kubernetes Leases: the ProcessRuntime with its API connections and
// kube::LeaseShardGroup, served by app::serveShards (ShardGroupProcess).
#include <optional>
#include <string>

#include "cluster/RestConfig.h"
#include "config/Config.h"
#include "log/Logger.h"

namespace leasehold::app {

struct ShardProcessInputs {
  const config::Config& config;
  const cluster::RestConfig& rest;
  std::string leaseNamespace;
  std::string podIp;
  std::optional<int> watchTimeoutSeconds;  // the test hook, when set
};

// Runs until the shutdown completes; returns the exit status (non-zero when it could not start,
// 2 after printing why; in run mode RunMode::exitCode()).
int runShardProcess(const ShardProcessInputs& in, const log::Logger& logger);

}  // namespace leasehold::app

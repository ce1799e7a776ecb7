#pragma once
// The process of shard mode (--shards N), on the ProcessRuntime: shard::ShardMode, the status
// API (GET /shards, GET /shards/watch, and /leader for shard 0), the probes with the shard
// metrics, the status file with the /shards JSON, and SIGTERM/SIGINT starting
// ShardMode::shutdown. In run mode (leasehold run --shards N -- CMD) every shard's Sidecar
// supervises one command (lock::RunMode with shard::shardCommands). app::SidecarProcess is its
// counterpart for one Lease.
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

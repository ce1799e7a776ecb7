#pragma once
// The process of shard mode (--shards N), whatever store keeps the group: shard::ShardMode on
// the LoopRuntime over the store's election::ShardGroup, the status server with /leader for shard
// 0 and shard::ShardPublisher's GET /shards, GET /shards/watch and status file, the probes with
// the shard metrics, and SIGTERM/SIGINT starting ShardMode::shutdown. In run mode
// (leasehold run --shards N -- CMD) every shard's Sidecar supervises one command (lock::RunMode
// with shard::shardCommands). The store's process (app/ShardProcess on Kubernetes Leases,
// app/EtcdProcess on etcd, app/ZooKeeperProcess on ZooKeeper) builds the group and hands it
// here; app/LockProcess is the counterpart for one lock.
#include <functional>
#include <memory>

#include "app/ProcessRuntime.h"
#include "config/Config.h"
#include "election/ShardGroup.h"
#include "log/Logger.h"

namespace leasehold::app {

struct ShardStore {
  std::unique_ptr<election::ShardGroup> group;
  std::function<bool()> answered;  // /readyz: whether the store has answered anything yet
  std::function<void()> shutdown;  // closes the store's connections, at the very end
  log::Fields starting;            // the "starting" line's fields that name the store
};

// Runs until the shutdown completes; returns the exit status (2 when it could not start, after
// printing why; in run mode RunMode::exitCode()).
int serveShards(LoopRuntime& rt, const config::Config& cfg, ShardStore store,
                const log::Logger& logger);

}  // namespace leasehold::app

#pragma once
// leasehold run --shards N -- CMD: what shard i's command is (lock::RunMode runs them, one per
// owned shard, each behind that shard's Sidecar): run mode's settings plus LEASEHOLD_SHARD=i,
// LEASEHOLD_SHARDS=N, LEASEHOLD_LEASE=locks[i] (<namespace>/NAME-i on Kubernetes, NAME/shards/i
// on etcd), and a release that is not a loss (a
// shard moved away by rebalancing is released, which --exit-on-loss must not take for a lost
// term). Its log lines carry "shard": i.
#include <cstddef>
#include <string>
#include <vector>

#include "lock/RunMode.h"
#include "supervise/Supervisor.h"

namespace leasehold::shard {

// One command per entry of `locks`.
std::vector<lock::RunMode::Command> shardCommands(const supervise::SupervisorConfig& base,
                                                  const std::vector<std::string>& locks);

}  // namespace leasehold::shard

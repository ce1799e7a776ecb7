#pragma once
// leasehold run --shards N -- CMD: what shard i's command is (lock::RunMode runs them, one per
// owned shard, each behind that shard's Sidecar): run mode's settings plus LEASEHOLD_SHARD=i,
// LEASEHOLD_SHARDS=N, LEASEHOLD_LEASE=<namespace>/NAME-i, and a release that is not a loss (a
// shard moved away by rebalancing is released, which --exit-on-loss must not take for a lost
// term). Its log lines carry "shard": i.
#include <cstddef>
#include <string>
#include <vector>

#include "lock/RunMode.h"
#include "supervise/Supervisor.h"

namespace leasehold::shard {

std::vector<lock::RunMode::Command> shardCommands(const supervise::SupervisorConfig& base,
                                                  const std::string& leaseNamespace,
                                                  const std::string& group, std::size_t shards);

}  // namespace leasehold::shard

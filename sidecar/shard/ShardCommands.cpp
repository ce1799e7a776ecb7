#include "shard/ShardCommands.h"

namespace leasehold::shard {

std::vector<lock::RunMode::Command> shardCommands(const supervise::SupervisorConfig& base,
                                                  const std::vector<std::string>& locks) {
  const std::size_t shards = locks.size();
  std::vector<lock::RunMode::Command> out;
  out.reserve(shards);
  for (std::size_t i = 0; i < shards; i++) {
    supervise::SupervisorConfig c = base;
    c.lease = locks[i];
    c.extraEnv = {{"LEASEHOLD_SHARD", std::to_string(i)},
                  {"LEASEHOLD_SHARDS", std::to_string(shards)}};
    c.exitOnRelease = false;
    out.push_back({std::move(c), {{"shard", std::to_string(i)}}});
  }
  return out;
}

}  // namespace leasehold::shard

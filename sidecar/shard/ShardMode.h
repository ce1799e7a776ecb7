#pragma once
// Shard mode (--shards N, docs/design.md "Shards"): N shard locks, each with its own
// lock::Sidecar (its own candidacy: query-time validity, step down at R, release on the way
// out, a fencing token that goes up every term), all on one loop, over an election::ShardGroup, the
// store that keeps the group (kube::LeaseShardGroup: Leases NAME-i and membership Leases with
// one label-selected watch; etcd::EtcdShardGroup: elections NAME/shards/i and membership keys
// under NAME/ with one prefix watch). Nothing here knows which store it is.
//
// After every change it sees (a Lease, a member's or a shard's expiry on this clock) it computes
// the target owner of every shard (shard::ShardAssignment over the group store's view) and:
//  - lets a shard's Elector acquire only while that shard is assigned here (eligibility);
//  - a shard it owns that is no longer assigned here is dropped at once (no longer in /shards,
//    the stream and the status file), then after --shard-drain released, so that its new owner
//    takes it at once;
// On a cold start (no shard held by anyone in the first list) a member starts acquiring one
// retry period after it started, so that members started together see each other first
// instead of grabbing everything and handing it back; joining a running group it starts at
// once (the assignment leaves it only what others give up).
//
// After every assignment the group store does its upkeep (ShardGroup::tidy).
//
// Run mode (config.commands): each shard's Sidecar has its command port; a dropped shard's
// command is stopped (SIGTERM, SIGKILL at --kill-grace) after --shard-drain, and the release
// waits for its group to be gone. On the way out every command is draining already
// (lock::RunMode stops them all at the first signal, before shutdown() is called); each
// shard's release waits for its command's group to be gone (Sidecar::shutdown).
//
// Shutdown: nothing is owned from then on; this member leaves the group (the others stop
// counting it), then every shard is released (Sidecar::shutdown), then done.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "election/ElectionTimings.h"
#include "election/ShardGroup.h"
#include "lock/Sidecar.h"
#include "log/Logger.h"
#include "publish/Metrics.h"
#include "time/Clock.h"

namespace leasehold::shard {

struct ShardModeConfig {
  std::string identity;
  std::string podName;  // handover alias, may be empty
  std::string group;    // --lease-name
  election::ElectionTimings timings;
  time::Duration drain{};  // --shard-drain
  // leasehold run --shards N (lock::RunMode, shard::shardCommands): shard i's command, one per
  // shard; empty in shard (sidecar) mode. A shard that moves away is then released only once its
  // command's group is gone (Sidecar::release); it is not owned (in /shards) from the drop on.
  std::vector<lock::CommandPort> commands{};
};

class ShardMode : private election::ShardGroupObserver {
 public:
  // `group` keeps the group and builds every shard's candidacy; the number of shards is its.
  ShardMode(time::Clock& clock, ShardModeConfig config, std::unique_ptr<election::ShardGroup> group,
            publish::Metrics& metrics, const log::Logger& logger);
  ~ShardMode();
  ShardMode(const ShardMode&) = delete;
  ShardMode& operator=(const ShardMode&) = delete;

  void start();
  // false when a shutdown is already running.
  bool shutdown(std::function<void()> done);

  // GET /shards, the stream and the status file, computed when asked:
  // {"identity","group","shards","members","owned":[{"shard","lease","fencingToken","validUntil"}]}
  std::string json() const;
  // Runs whenever the owned set (shards and their tokens) may have changed.
  void setOwnedSetChanged(std::function<void()> f) { ownedChanged_ = std::move(f); }
  // /leader in shard mode: this member's leadership of shard 0 (NAME-0).
  election::Leadership leadership() const;
  // POST /leader/release: releases shard 0 (taken again here if it is still assigned here).
  void releaseShardZero();
  // /healthz: the first shard held without a successful renewal for D + margin.
  std::optional<std::string> unhealthyReason() const;
  // leasehold_shards_owned, leasehold_shard_members, leasehold_shard_fencing_token{shard}.
  std::string metricsText() const;

 private:
  void onGroupListed() override;
  void onGroupChanged() override;

  void rebalanceSoon();
  void rebalance();
  void onShardEvent(std::size_t shard);
  void drop(std::size_t shard);
  void releaseDropped(std::size_t shard);
  bool owns(std::size_t shard) const;
  bool eligible(std::size_t shard) const;
  void noteOwnedSet();

  time::Clock& clock_;
  ShardModeConfig config_;
  publish::Metrics& metrics_;
  const log::Logger& logger_;
  std::unique_ptr<election::ShardGroup> group_;
  std::size_t shards_;
  std::vector<log::Logger> shardLoggers_;  // sized once: each Sidecar keeps a reference
  std::vector<std::unique_ptr<lock::Sidecar>> sidecars_;
  std::vector<char> assigned_;
  std::vector<char> dropping_;
  std::vector<char> releasing_;  // released, still leader until the release lands (run mode)
  std::vector<std::unique_ptr<time::Timer>> drainTimers_;
  std::unique_ptr<time::Timer> rebalanceTimer_;
  std::unique_ptr<time::Timer> expiryTimer_;
  std::unique_ptr<time::Timer> settleTimer_;
  bool listed_ = false;
  bool settled_ = false;
  bool stopping_ = false;
  std::string lastOwnedKey_;
  std::function<void()> ownedChanged_;
  std::function<void()> shutdownDone_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::shard

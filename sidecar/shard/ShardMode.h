#pragma once
// Shard mode (--shards N, docs/design.md "Shards"): N shard Leases NAME-0 .. NAME-(N-1), each
// with its own lock::Sidecar (its own Elector: query-time validity, step down at R, CAS, release
// on the way out, fencing token = its leaseTransitions), all on one loop, plus this member's
// membership Lease and ONE label-selected watch of the group's Leases that feeds every shard's
// Elector and the group view.
//
// After every change it sees (a Lease, a member's or a shard's expiry on this clock) it computes
// the target owner of every shard (shard::ShardAssignment over shard::GroupView) and:
//  - lets a shard's Elector acquire only while that shard is assigned here (eligibility);
//  - a shard it owns that is no longer assigned here is dropped at once (no longer in /shards,
//    the stream and the status file), then after --shard-drain released, so that its new owner
//    takes it at once;
// On a cold start (no shard held by anyone in the first list) a member starts acquiring one
// retry period after it started, so that members started together see each other first
// instead of grabbing everything and handing it back; joining a running group it starts at
// once (the assignment leaves it only what others give up).
//
// The membership Leases of replicas that crashed (expired here for 10 D) are deleted by the
// live member whose identity sorts first, so that they do not pile up.
//
// Run mode (config.commands): each shard's Sidecar has its command port; a dropped shard's
// command is stopped (SIGTERM, SIGKILL at --kill-grace) after --shard-drain, and the release
// waits for its group to be gone. On the way out every command is draining already
// (lock::RunMode stops them all at the first signal, before shutdown() is called); each
// shard's release waits for its command's group to be gone (Sidecar::shutdown).
//
// Shutdown: nothing is owned from then on; the membership Lease is deleted (the others stop
// counting this member), then every shard is released (Sidecar::shutdown), then done.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "election/ElectionTimings.h"
#include "kube/ApiTransport.h"
#include "kube/LeaseGroupWatch.h"
#include "lock/Sidecar.h"
#include "log/Logger.h"
#include "publish/LeadershipJson.h"
#include "publish/Metrics.h"
#include "shard/GroupView.h"
#include "shard/MembershipLease.h"
#include "shard/ShardLeaseStore.h"
#include "time/Clock.h"

namespace leasehold::shard {

inline constexpr const char* kShardGroupLabel = "leasehold.io/shard-group";

struct ShardModeConfig {
  std::string identity;
  std::string podName;  // holder annotation and handover alias, may be empty
  std::string podIp;
  publish::LeaseName group;  // namespace and --lease-name
  std::size_t shards = 1;
  election::ElectionTimings timings;
  time::Duration drain{};  // --shard-drain
  std::chrono::milliseconds requestDeadline{5000};
  int watchTimeoutSeconds = 300;
  // leasehold run --shards N (lock::RunMode, shard::shardCommands): shard i's command, one per
  // shard; empty in shard (sidecar) mode. A shard that moves away is then released only once its
  // command's group is gone (Sidecar::release); it is not owned (in /shards) from the drop on.
  std::vector<lock::CommandPort> commands{};
};

class ShardMode : private kube::LeaseGroupObserver {
 public:
  // `api` is the Lease connection (ApiConnections::lease()): renewals, the group watch and the
  // membership Lease all go through it.
  ShardMode(time::Clock& clock, ShardModeConfig config, kube::ApiTransport& api,
            publish::Metrics& metrics, const log::Logger& logger, std::function<double()> random01);
  ~ShardMode() override;
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
  void onGroupListed(const std::vector<kube::NamedLease>& leases) override;
  void onGroupLease(const std::string& name,
                    const std::optional<election::LeaseRecord>& record) override;
  void onGroupWatchState(bool healthy) override;

  void rebalanceSoon();
  void rebalance();
  void onShardEvent(std::size_t shard);
  void drop(std::size_t shard);
  void releaseDropped(std::size_t shard);
  bool owns(std::size_t shard) const;
  bool eligible(std::size_t shard) const;
  void noteOwnedSet();
  void collectStaleMembers(const std::vector<std::string>& members);

  time::Clock& clock_;
  ShardModeConfig config_;
  publish::Metrics& metrics_;
  const log::Logger& logger_;
  shard::GroupView view_;
  std::vector<log::Logger> shardLoggers_;        // sized once: each Sidecar keeps a reference
  std::vector<shard::ShardLeaseStore*> stores_;  // owned by the Sidecars' ports
  std::vector<std::unique_ptr<lock::Sidecar>> sidecars_;
  std::unique_ptr<shard::MembershipLease> membership_;
  std::unique_ptr<kube::LeaseGroupWatch> watch_;
  kube::ApiTransport& api_;
  std::set<std::string> deleting_;  // stale membership Leases being deleted
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

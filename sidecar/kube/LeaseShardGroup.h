#pragma once
// The shard group in Kubernetes Leases (election::ShardGroup; docs/design.md "Shards"): shard i is
// the Lease NAME-i, each member keeps a membership Lease NAME-member-<hash> (MembershipLease),
// and ONE label-selected watch of the group's Leases (LeaseGroupWatch, label
// leasehold.io/shard-group=NAME) feeds the group view (GroupView: liveness judged on this
// clock) and every shard's Elector (through its ShardLeaseStore, so that a follower sends no
// request of its own). Every write carries the group's label.
#include <cstddef>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "election/ElectionTimings.h"
#include "election/ShardGroup.h"
#include "kube/ApiTransport.h"
#include "kube/GroupView.h"
#include "kube/LeaseClient.h"
#include "kube/LeaseGroupWatch.h"
#include "kube/MembershipLease.h"
#include "kube/ShardLeaseStore.h"
#include "log/Logger.h"
#include "time/Clock.h"

namespace leasehold::kube {

inline constexpr const char* kShardGroupLabel = "leasehold.io/shard-group";

struct LeaseShardGroupConfig {
  std::string identity;
  std::string podName;  // holder annotation, may be empty
  std::string podIp;
  std::string ns;
  std::string group;  // --lease-name
  std::size_t shards = 1;
  election::ElectionTimings timings;
  std::chrono::milliseconds requestDeadline{5000};
  int watchTimeoutSeconds = 300;
};

class LeaseShardGroup final : public election::ShardGroup, private LeaseGroupObserver {
 public:
  // `api` is the Lease connection (ApiConnections::lease()): renewals, the group watch and the
  // membership Lease all go through it.
  LeaseShardGroup(time::Clock& clock, LeaseShardGroupConfig config, ApiTransport& api,
                  const log::Logger& logger, std::function<double()> random01);
  ~LeaseShardGroup() override;
  LeaseShardGroup(const LeaseShardGroup&) = delete;
  LeaseShardGroup& operator=(const LeaseShardGroup&) = delete;

  std::size_t shards() const override { return config_.shards; }
  election::LockName shardName(std::size_t shard) const override;
  std::string shardLock(std::size_t shard) const;  // the Lease's name
  std::unique_ptr<election::Candidacy> shardCandidacy(std::size_t shard) override;
  void start(election::ShardGroupObserver& observer) override;
  std::vector<std::string> liveMembers(time::MonoTime now) const override;
  std::vector<std::string> owners(time::MonoTime now) const override;
  std::optional<time::MonoTime> nextExpiry(time::MonoTime now) const override;
  void tidy(const std::vector<std::string>& liveMembers) override;
  void leave(std::function<void()> done) override;
  void stop() override;

 private:
  void onGroupListed(const std::vector<NamedLease>& leases) override;
  void onGroupLease(const std::string& name,
                    const std::optional<election::LeaseRecord>& record) override;
  void onGroupWatchState(bool healthy) override;
  LeaseClientOptions leaseOptions() const;

  time::Clock& clock_;
  LeaseShardGroupConfig config_;
  ApiTransport& api_;
  const log::Logger& logger_;
  std::function<double()> random01_;
  GroupView view_;
  std::vector<ShardLeaseStore*> stores_;  // owned by the shards' candidacies
  std::unique_ptr<MembershipLease> membership_;
  std::unique_ptr<LeaseGroupWatch> watch_;
  election::ShardGroupObserver* observer_ = nullptr;
  std::set<std::string> deleting_;  // stale membership Leases being deleted
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube

#pragma once
// The shard group in etcd (election::ShardGroup; docs/design.md "Shards" and "The etcd store"),
// every key under the election's prefix NAME/:
//
//  - shard i is the etcd election NAME/shards/i: its candidacy is an EtcdCampaign (keys
//    NAME/shards/i/<lease id in hex>, the oldest leads, token = its create revision), so that
//    `etcdctl elect -l NAME/shards/i` names its owner. A member holds a lease and a key there
//    only while the shard is assigned to it (EtcdCampaign's eligibility);
//  - this member's membership is its place in the election NAME/members (an EtcdCampaign whose
//    leadership nobody asks): a key whose value is the identity, attached to a lease kept alive
//    every P. etcd deletes it D after a crash; leave() revokes it at once;
//  - ONE watch of the prefix NAME/ (after a range of it) is the group view: the live members
//    are the values under NAME/members/, the owner of shard i the value of the oldest key under
//    NAME/shards/i/. No clock judges liveness here: etcd expires the leases, and the watch
//    says when a key goes. Keys of any other shape under NAME/ are not the group's and are
//    ignored.
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "election/ElectionTimings.h"
#include "election/ShardGroup.h"
#include "etcd/EtcdCampaign.h"
#include "etcd/EtcdTransport.h"
#include "log/Logger.h"
#include "time/Clock.h"

namespace leasehold::etcd {

struct EtcdShardGroupConfig {
  std::string identity;
  std::string group;  // --lease-name: every key lives under "<group>/"
  std::size_t shards = 1;
  election::ElectionTimings timings;
};

class EtcdShardGroup final : public election::ShardGroup {
 public:
  EtcdShardGroup(time::Clock& clock, EtcdTransport& etcd, EtcdShardGroupConfig config,
                 const log::Logger& logger);
  ~EtcdShardGroup() override;
  EtcdShardGroup(const EtcdShardGroup&) = delete;
  EtcdShardGroup& operator=(const EtcdShardGroup&) = delete;

  std::size_t shards() const override { return config_.shards; }
  election::LockName shardName(std::size_t shard) const override;
  std::string shardLock(std::size_t shard) const;  // the election's name
  std::unique_ptr<election::Candidacy> shardCandidacy(std::size_t shard) override;
  void start(election::ShardGroupObserver& observer) override;
  std::vector<std::string> liveMembers(time::MonoTime now) const override;
  std::vector<std::string> owners(time::MonoTime now) const override;
  std::optional<time::MonoTime> nextExpiry(time::MonoTime) const override { return std::nullopt; }
  void tidy(const std::vector<std::string>&) override {}  // etcd expires what crashed members left
  void leave(std::function<void()> done) override;
  void stop() override;

  // The membership election's name ("<group>/members").
  std::string membersElection() const { return config_.group + "/members"; }

 private:
  struct Key {
    std::string value;
    Revision createRevision = 0;
  };

  void list();
  void openWatch(Revision from);
  void onWatch(const WatchMessage& m);
  void retryLater(const std::string& what, const std::string& why);

  time::Clock& clock_;
  EtcdTransport& etcd_;
  EtcdShardGroupConfig config_;
  const log::Logger& logger_;
  std::string prefix_;
  std::unique_ptr<EtcdCampaign> membership_;
  std::map<std::string, Key> keys_;  // the group's keys under the prefix, as last seen
  election::ShardGroupObserver* observer_ = nullptr;
  std::shared_ptr<EtcdWatch> watch_;
  std::unique_ptr<time::Timer> retryTimer_;
  bool listing_ = false;
  bool stopped_ = false;
  std::string lastProblem_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::etcd

#pragma once
// The shard group on ZooKeeper (election::ShardGroup; docs/design.md "Shards" and "The
// ZooKeeper store"), every znode under the group's path /NAME (--lease-name, within the
// connect string's chroot):
//
//  - shard i is the election /NAME/shards/i in kazoo's layout: its candidacy is a ZkCampaign
//    (ephemeral-sequential <uuid>__lock__<seq>, data = identity, the lowest leads, token = its
//    czxid), so that `kazoo Election("/NAME/shards/3").contenders()` names its queue. A member
//    has a node there only while the shard is assigned to it (ZkCampaign's eligibility);
//  - this member's membership is its node in the election /NAME/members (a ZkCampaign whose
//    leadership nobody asks): an ephemeral node whose data is the identity. ZooKeeper deletes
//    it when the session expires after a crash; leave() deletes it at once;
//  - the group view: a child watch on /NAME/members (and each new member node's data, read
//    once) gives the live members; a child watch on each /NAME/shards/i (and the lowest
//    contender's data) gives shard i's owner. No clock judges liveness here: the ensemble
//    expires the sessions, and the watches say when a node goes. Children that are not
//    contenders (kazoo's `__lock__\d{10}` suffix) are ignored.
//
// ONE ZooKeeper session serves the whole group (the session is the member's liveness): a
// ZkSharedSession over the process's ZkClient gives the membership, every shard's campaign and
// the view a ZkClient each; it opens the session once. The process closes the session at the end.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "election/ElectionTimings.h"
#include "election/ShardGroup.h"
#include "log/Logger.h"
#include "time/Clock.h"
#include "zookeeper/ZkCampaign.h"
#include "zookeeper/ZkClient.h"
#include "zookeeper/ZkSharedSession.h"

namespace leasehold::zookeeper {

struct ZkShardGroupConfig {
  std::string identity;
  std::string group;  // --lease-name: every znode lives under "/<group>"
  std::size_t shards = 1;
  election::ElectionTimings timings;
  time::Duration serverLag{};  // ZkCampaignConfig::serverLag
};

class ZkShardGroup final : public election::ShardGroup {
 public:
  // newUuid: each campaign's node prefix (tests); the default is random.
  ZkShardGroup(time::Clock& clock, ZkClient& zk, ZkShardGroupConfig config,
               const log::Logger& logger, std::function<std::string()> newUuid = {});
  ~ZkShardGroup() override;
  ZkShardGroup(const ZkShardGroup&) = delete;
  ZkShardGroup& operator=(const ZkShardGroup&) = delete;

  std::size_t shards() const override { return config_.shards; }
  election::LockName shardName(std::size_t shard) const override;
  std::string shardPath(std::size_t shard) const;  // "/<group>/shards/<i>"
  std::unique_ptr<election::Candidacy> shardCandidacy(std::size_t shard) override;
  void start(election::ShardGroupObserver& observer) override;
  std::vector<std::string> liveMembers(time::MonoTime now) const override;
  std::vector<std::string> owners(time::MonoTime now) const override;
  std::optional<time::MonoTime> nextExpiry(time::MonoTime) const override { return std::nullopt; }
  void tidy(const std::vector<std::string>&) override {}  // sessions expire what crashes left
  void leave(std::function<void()> done) override;
  void stop() override;

  std::string membersPath() const { return root_ + "/members"; }

 private:
  struct Dir {  // a watched parent: /NAME/members or /NAME/shards/i
    std::string path;
    std::map<std::string, std::string> data;  // child -> its data, once read
    std::vector<std::string> contenders;      // in kazoo's order
    bool read = false;                        // read at least once
    bool reading = false;
    bool again = false;  // changed while reading: read again when the answer comes
  };

  void onSession(const ZkSessionEvent& e);
  void readAll();
  void readDir(std::size_t d);
  void onChildren(std::size_t d, const ZkResult& r, std::vector<std::string> children);
  void readData(std::size_t d, const std::string& child);
  void changed(std::size_t d);
  void retryLater(const std::string& what, const ZkResult& r);
  std::function<void(const ZkWatchEvent&)> watcher(std::size_t d);

  time::Clock& clock_;
  ZkShardGroupConfig config_;
  const log::Logger& logger_;
  std::function<std::string()> newUuid_;
  std::string root_;
  ZkSharedSession shared_;
  std::unique_ptr<ZkClient> view_;
  std::vector<std::unique_ptr<ZkClient>> campaignClients_;
  std::unique_ptr<ZkCampaign> membership_;
  std::vector<Dir> dirs_;  // [0] the members, [1 + i] shard i
  election::ShardGroupObserver* observer_ = nullptr;
  std::unique_ptr<time::Timer> retryTimer_;
  bool listed_ = false;
  bool stopped_ = false;
  std::string lastProblem_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::zookeeper

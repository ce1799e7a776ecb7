#pragma once
// The store below shard mode (docs/design.md, "Shards" and "The store boundary"): what
// shard::ShardMode needs from wherever the group lives, so that ShardMode, the assignment and
// /shards are written once. kube::LeaseShardGroup keeps the group in Kubernetes Leases
// (NAME-i, NAME-member-<hash>, one label-selected watch); etcd::EtcdShardGroup in etcd, under
// the election's prefix (NAME/shards/i elections, NAME/members keys, one prefix watch);
// zookeeper::ZkShardGroup in ZooKeeper, under /NAME (/NAME/shards/i elections in kazoo's layout,
// /NAME/members ephemeral nodes, child watches, one session).
//
// A group store decides nothing: it runs this member's membership, builds each shard's
// election::Candidacy, and says who is live and who owns each shard as this member observes
// it. Callbacks come on the event loop, never from inside a call.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "election/Candidacy.h"
#include "election/LockName.h"
#include "time/Time.h"

namespace leasehold::election {

class ShardGroupObserver {
 public:
  // The whole group was read (the first time: the shards' candidacies may start now).
  virtual void onGroupListed() = 0;
  // Something in the group changed: a member, a shard's owner.
  virtual void onGroupChanged() = 0;

 protected:
  ~ShardGroupObserver() = default;
};

class ShardGroup {
 public:
  virtual ~ShardGroup() = default;

  virtual std::size_t shards() const = 0;
  // Shard i's lock as people and the status API name it (the Lease "work-3" in its namespace;
  // the election "work/shards/3" on etcd, and on ZooKeeper, whose path is /work/shards/3).
  virtual LockName shardName(std::size_t shard) const = 0;
  // Shard i's candidacy; asked once per shard, before start().
  virtual std::unique_ptr<election::Candidacy> shardCandidacy(std::size_t shard) = 0;

  // Joins the group (this member's membership) and starts observing it.
  virtual void start(ShardGroupObserver& observer) = 0;
  // Sorted identities of the live members, self always among them.
  virtual std::vector<std::string> liveMembers(time::MonoTime now) const = 0;
  // owners[i]: who owns shard i now, as observed here; "" for nobody.
  virtual std::vector<std::string> owners(time::MonoTime now) const = 0;
  // The next instant the answers above change without a new observation (a store that judges
  // expiry on this clock); nullopt when only observations change them.
  virtual std::optional<time::MonoTime> nextExpiry(time::MonoTime now) const = 0;
  // After every assignment, with its live members: the store's upkeep (on Kubernetes the first
  // live member deletes the membership Leases crashed replicas left behind).
  virtual void tidy(const std::vector<std::string>& liveMembers) = 0;
  // Leaves the group: the others stop counting this member at once. done runs on the answer
  // (or its failure).
  virtual void leave(std::function<void()> done) = 0;
  // Stops observing (the end of the shutdown).
  virtual void stop() = 0;
};

}  // namespace leasehold::election

#pragma once
// One member's view of its shard group, from the group's Leases as observed (the label-
// selected watch): who is live and who owns each shard right now. Pure: time comes in as the
// caller's monotonic now, so it replays in unit tests.
//
// Liveness is judged on this machine's clock only, never on the other machine's renewTime: a
// Lease (membership or shard) counts from the instant this process saw its resourceVersion
// change, for its leaseDurationSeconds. A member whose membership Lease has not changed for its
// duration is gone; a shard whose Lease has not changed for its duration has no owner. This
// member itself is always live.
//
// Names: shard i is the Lease GROUP-i; the membership Lease of identity X is
// GROUP-member-<16 hex digits of a hash of X> (identities need not be valid names); its
// holderIdentity is X.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "election/lease/LeaseRecord.h"
#include "time/Time.h"

namespace leasehold::kube {

struct GroupLayout {
  std::string group;  // --lease-name
  std::size_t shards = 1;

  std::string shardLease(std::size_t shard) const;
  std::string memberLease(const std::string& identity) const;
  std::optional<std::size_t> shardOf(const std::string& leaseName) const;
  bool isMemberLease(const std::string& leaseName) const;
};

class GroupView {
 public:
  GroupView(GroupLayout layout, std::string self, time::Duration defaultDuration);

  // The whole group as listed (names not in it are gone).
  void listed(const std::vector<std::pair<std::string, election::LeaseRecord>>& leases,
              time::MonoTime now);
  void changed(const std::string& name, const std::optional<election::LeaseRecord>& record,
               time::MonoTime now);

  // Sorted; always holds self.
  std::vector<std::string> liveMembers(time::MonoTime now) const;
  // owners[i]: the holder of shard i's Lease while it is valid as observed, else "".
  std::vector<std::string> owners(time::MonoTime now) const;
  // Membership Leases that expired (as observed here) more than `age` ago: left by replicas
  // that crashed; somebody deletes them (shard/ShardMode), else they stay forever.
  std::vector<std::string> staleMemberLeases(time::MonoTime now, time::Duration age) const;
  // The next instant a member or a shard Lease can expire (to compute again then).
  std::optional<time::MonoTime> nextExpiry(time::MonoTime now) const;

  const GroupLayout& layout() const { return layout_; }

 private:
  struct Seen {
    election::LeaseRecord record;
    time::MonoTime at;
  };
  void note(const std::string& name, const election::LeaseRecord& record, time::MonoTime now);
  time::MonoTime expiry(const Seen& s) const;

  GroupLayout layout_;
  std::string self_;
  time::Duration defaultDuration_;
  std::map<std::string, Seen> members_;  // by Lease name
  std::vector<std::optional<Seen>> shards_;
};

}  // namespace leasehold::kube

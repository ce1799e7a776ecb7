#pragma once
// Who should own each shard of a group, from one member's view: the live members and the
// current owner of every shard. Pure and deterministic: every member that sees the same view
// computes the same answer, whatever order the members came in.
//
// The rules (docs/design.md, "Shards"):
//  - balance: with N shards and M members every member gets floor(N/M) or ceil(N/M);
//  - who gets the ceil: first the members that already own at least ceil(N/M) shards (they
//    would otherwise have to give one away), then the rest; ties by a rendezvous score of the
//    member, so the choice does not flip while shards are on their way;
//  - a member keeps what it owns up to its share (the shards with its highest rendezvous
//    scores); shards of a member that is gone, of nobody, or above an owner's share are free;
//  - each free shard goes, in ascending order, to the member with room whose rendezvous score
//    for (shard, member) is highest.
// Hence a member that joins takes at most ceil(N/(M+1)) shards and only from others' surplus,
// a member that leaves moves only its own shards, and a restart with the same owners changes
// nothing. The score is FNV-1a, so it is the same on every machine and in every build.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::shard {

class ShardAssignment {
 public:
  // owners[i]: the current owner of shard i ("" for none); owners.size() is the shard count.
  // Returns the target owner of every shard; all "" when there are no members. An owner that
  // is not among members counts as gone. Duplicate members count once.
  static std::vector<std::string> assign(const std::vector<std::string>& owners,
                                         std::vector<std::string> members);
  // The rendezvous score of (shard, member); shard == the shard count ranks for the ceil.
  static std::uint64_t score(std::size_t shard, std::string_view member);
};

}  // namespace leasehold::shard

#pragma once
// The rendezvous score of (shard, member): which member a shard prefers (shard mode's
// assignment) and the hash in a Kubernetes membership Lease's name (kube::GroupView, score(0,
// identity)). Here, beside the boundary, because both shard/ and a store use it and a store
// does not depend on shard/. FNV-1a 64 of the shard's 8 bytes (little-endian) and the member,
// finished with splitmix64's finaliser: the same on every machine and in every build, so a
// name or an assignment never changes across an upgrade (GroupViewTest and ShardAssignmentTest
// pin values).

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace leasehold::election {

std::uint64_t rendezvousScore(std::size_t shard, std::string_view member);

}  // namespace leasehold::election

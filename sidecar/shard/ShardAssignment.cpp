#include "shard/ShardAssignment.h"

#include "election/RendezvousScore.h"

#include <algorithm>
#include <map>

namespace leasehold::shard {

std::uint64_t ShardAssignment::score(std::size_t shard, std::string_view member) {
  return election::rendezvousScore(shard, member);
}

std::vector<std::string> ShardAssignment::assign(const std::vector<std::string>& owners,
                                                 std::vector<std::string> members) {
  const std::size_t n = owners.size();
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  std::vector<std::string> target(n);
  const std::size_t m = members.size();
  if (m == 0) return target;

  // What each member owns now, by member index.
  std::map<std::string_view, std::size_t> index;
  for (std::size_t j = 0; j < m; j++)
    index.emplace(members[j], j);
  std::vector<std::vector<std::size_t>> owned(m);
  for (std::size_t i = 0; i < n; i++) {
    const auto it = index.find(owners[i]);
    if (it != index.end()) owned[it->second].push_back(i);
  }

  // Shares: floor for all, ceil for `extra` of them.
  const std::size_t floorShare = n / m;
  const std::size_t extra = n % m;
  const std::size_t ceilShare = floorShare + (extra ? 1 : 0);
  std::vector<std::size_t> order(m);
  for (std::size_t j = 0; j < m; j++)
    order[j] = j;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const bool fullA = owned[a].size() >= ceilShare;
    const bool fullB = owned[b].size() >= ceilShare;
    if (fullA != fullB) return fullA;
    const auto sa = score(n, members[a]);
    const auto sb = score(n, members[b]);
    if (sa != sb) return sa > sb;
    return members[a] < members[b];
  });
  std::vector<std::size_t> share(m, floorShare);
  for (std::size_t k = 0; k < extra; k++)
    share[order[k]] = ceilShare;

  // Each member keeps its best-scoring shards up to its share.
  std::vector<std::size_t> room(m);
  std::vector<bool> placed(n, false);
  for (std::size_t j = 0; j < m; j++) {
    auto& mine = owned[j];
    if (mine.size() > share[j]) {
      std::sort(mine.begin(), mine.end(), [&](std::size_t a, std::size_t b) {
        const auto sa = score(a, members[j]);
        const auto sb = score(b, members[j]);
        return sa != sb ? sa > sb : a < b;
      });
      mine.resize(share[j]);
    }
    for (std::size_t i : mine) {
      target[i] = members[j];
      placed[i] = true;
    }
    room[j] = share[j] - mine.size();
  }

  // Free shards, in ascending order, to the member with room that scores them highest.
  for (std::size_t i = 0; i < n; i++) {
    if (placed[i]) continue;
    std::size_t best = m;
    std::uint64_t bestScore = 0;
    for (std::size_t j = 0; j < m; j++) {
      if (room[j] == 0) continue;
      const auto s = score(i, members[j]);
      if (best == m || s > bestScore) {
        best = j;
        bestScore = s;
      }
    }
    // The shares add up to n, so some member always has room.
    target[i] = members[best];
    room[best]--;
  }
  return target;
}

}  // namespace leasehold::shard

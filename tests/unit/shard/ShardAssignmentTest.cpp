// ShardAssignment: table cases, then properties over random memberships (seeded, bounded):
// balance, minimal movement on join and leave, fixpoint (a restart changes nothing),
// determinism under member order, and that the moves in flight never change the answer.
#include "shard/ShardAssignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace leasehold::shard {
namespace {

using Owners = std::vector<std::string>;

std::map<std::string, std::size_t> counts(const Owners& owners) {
  std::map<std::string, std::size_t> c;
  for (const auto& o : owners)
    if (!o.empty()) c[o]++;
  return c;
}

Owners names(std::size_t n, const std::string& prefix = "m") {
  Owners v;
  for (std::size_t i = 0; i < n; i++)
    v.push_back(prefix + std::to_string(i));
  return v;
}

void expectBalanced(const Owners& target, const Owners& members) {
  const std::size_t n = target.size();
  const std::size_t m = std::set<std::string>(members.begin(), members.end()).size();
  auto c = counts(target);
  std::size_t total = 0;
  for (const auto& member : members) {
    const std::size_t k = c[member];
    EXPECT_GE(k, n / m) << member;
    EXPECT_LE(k, (n + m - 1) / m) << member;
  }
  for (const auto& [member, k] : c) {
    EXPECT_TRUE(std::find(members.begin(), members.end(), member) != members.end()) << member;
    total += k;
  }
  EXPECT_EQ(total, n);
}

std::size_t moved(const Owners& before, const Owners& after) {
  std::size_t k = 0;
  for (std::size_t i = 0; i < before.size(); i++)
    if (before[i] != after[i]) k++;
  return k;
}

struct Case {
  const char* name;
  Owners owners;
  Owners members;
  Owners expected;  // empty: check only balance
};

TEST(ShardAssignmentTest, Table) {
  const std::vector<Case> cases = {
      {"no members: nobody", {"a", ""}, {}, {"", ""}},
      {"no shards", {}, {"a"}, {}},
      {"one member takes all", {"", "x", ""}, {"a"}, {"a", "a", "a"}},
      {"balanced owners keep everything", {"a", "b", "a", "b"}, {"b", "a"}, {"a", "b", "a", "b"}},
      {"a gone member's shards go to the others", {"a", "b", "c", "c"}, {"a", "b"}, {}},
      {"duplicate members count once", {"", "", "", ""}, {"a", "a", "b"}, {}},
      {"more members than shards: one each at most", {"", ""}, {"a", "b", "c"}, {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto target = ShardAssignment::assign(c.owners, c.members);
    ASSERT_EQ(target.size(), c.owners.size());
    if (!c.expected.empty()) {
      EXPECT_EQ(target, c.expected);
    }
    if (!c.members.empty()) expectBalanced(target, c.members);
  }
}

TEST(ShardAssignmentTest, AGoneMembersShardsAreTheOnlyOnesThatMove) {
  const Owners owners = {"a", "b", "c", "a", "b", "c"};
  const auto target = ShardAssignment::assign(owners, {"a", "b"});
  for (std::size_t i = 0; i < owners.size(); i++) {
    if (owners[i] != "c") {
      EXPECT_EQ(target[i], owners[i]) << i;
    }
    EXPECT_NE(target[i], "c");
  }
}

TEST(ShardAssignmentTest, TheScoreIsFixed) {
  // The same on every machine and build: members of one group must agree.
  EXPECT_EQ(ShardAssignment::score(0, ""), ShardAssignment::score(0, ""));
  EXPECT_NE(ShardAssignment::score(0, "a"), ShardAssignment::score(1, "a"));
  EXPECT_NE(ShardAssignment::score(0, "a"), ShardAssignment::score(0, "b"));
  const auto cold = ShardAssignment::assign(Owners(16), names(4));
  EXPECT_EQ(cold, ShardAssignment::assign(Owners(16), {"m3", "m1", "m0", "m2"}));
}

// The joiner takes exactly its share, only from members above theirs; nobody else gains.
TEST(ShardAssignmentTest, PropertyJoinMovesOnlySurplus) {
  std::mt19937_64 rng(15);
  for (int round = 0; round < 400; round++) {
    const std::size_t n = 1 + rng() % 64;
    const std::size_t m = 1 + rng() % 12;
    auto members = names(m, "r" + std::to_string(rng() % 1000) + "-");
    const auto before = ShardAssignment::assign(Owners(n), members);
    expectBalanced(before, members);
    const std::string joiner = "new-" + std::to_string(rng());
    auto joined = members;
    joined.push_back(joiner);
    const auto after = ShardAssignment::assign(before, joined);
    SCOPED_TRACE("n=" + std::to_string(n) + " m=" + std::to_string(m));
    expectBalanced(after, joined);
    const auto c = counts(after);
    const std::size_t joinerCount = c.contains(joiner) ? c.at(joiner) : 0;
    EXPECT_LE(joinerCount, (n + m) / (m + 1));
    EXPECT_EQ(moved(before, after), joinerCount);
    for (std::size_t i = 0; i < n; i++) {
      if (before[i] != after[i]) {
        EXPECT_EQ(after[i], joiner) << i;
      }
    }
  }
}

TEST(ShardAssignmentTest, PropertyLeaveMovesOnlyTheLeaversShards) {
  std::mt19937_64 rng(16);
  for (int round = 0; round < 400; round++) {
    const std::size_t n = 1 + rng() % 64;
    const std::size_t m = 2 + rng() % 12;
    auto members = names(m, "p" + std::to_string(rng() % 1000) + "-");
    const auto before = ShardAssignment::assign(Owners(n), members);
    const std::string leaver = members[rng() % m];
    auto left = members;
    left.erase(std::find(left.begin(), left.end(), leaver));
    const auto after = ShardAssignment::assign(before, left);
    SCOPED_TRACE("n=" + std::to_string(n) + " m=" + std::to_string(m));
    expectBalanced(after, left);
    for (std::size_t i = 0; i < n; i++) {
      if (before[i] != leaver) {
        EXPECT_EQ(after[i], before[i]) << i;
      }
    }
  }
}

// A restart (or any member recomputing) with the owners it settled on changes nothing, from
// any starting point; and the order members are listed in does not matter.
TEST(ShardAssignmentTest, PropertyFixpointAndDeterminism) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 400; round++) {
    const std::size_t n = 1 + rng() % 64;
    const std::size_t m = 1 + rng() % 12;
    auto members = names(m, "q" + std::to_string(rng() % 1000) + "-");
    Owners owners(n);
    for (auto& o : owners) {
      const auto pick = rng() % (m + 2);
      o = pick < m ? members[pick] : (pick == m ? "" : "gone");
    }
    const auto target = ShardAssignment::assign(owners, members);
    expectBalanced(target, members);
    EXPECT_EQ(ShardAssignment::assign(target, members), target);
    auto shuffled = members;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    EXPECT_EQ(ShardAssignment::assign(owners, shuffled), target);
  }
}

// While shards move, the owners seen are a mix of before and after: a shard already dropped by
// its old owner, or already taken by its new one. The answer must stay the same throughout, or
// members would chase a moving target.
TEST(ShardAssignmentTest, PropertyMovesInFlightDoNotChangeTheTarget) {
  std::mt19937_64 rng(18);
  for (int round = 0; round < 300; round++) {
    const std::size_t n = 1 + rng() % 64;
    const std::size_t m = 1 + rng() % 10;
    auto members = names(m, "s" + std::to_string(rng() % 1000) + "-");
    const auto before = ShardAssignment::assign(Owners(n), members);
    auto changed = members;
    if (m > 1 && rng() % 2) {
      changed.erase(changed.begin() + static_cast<long>(rng() % m));
    } else {
      changed.push_back("j" + std::to_string(rng()));
    }
    const auto target = ShardAssignment::assign(before, changed);
    Owners midway = before;
    for (std::size_t i = 0; i < n; i++) {
      if (before[i] == target[i]) continue;
      const auto state = rng() % 3;  // not yet dropped, dropped, taken
      midway[i] = state == 0 ? before[i] : state == 1 ? "" : target[i];
      SCOPED_TRACE("n=" + std::to_string(n) + " m=" + std::to_string(m));
      EXPECT_EQ(ShardAssignment::assign(midway, changed), target);
    }
  }
}

}  // namespace
}  // namespace leasehold::shard

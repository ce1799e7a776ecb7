// Shard mode on etcd: shard::ShardMode over etcd::EtcdShardGroup, several members on one
// MemoryEtcd (each through its own Link, so that one can be cut off) and the FakeClock. What
// it checks: the group's keys live under NAME/ in etcd's election layout (NAME/members/<lease>,
// NAME/shards/i/<lease>, values = identities); the shards end balanced over the members and each
// is owned by exactly one of them, with its key's create revision as token; a member holds a
// key in a shard's election only while the shard is assigned to it; a member that leaves
// (shutdown) revokes its membership at once and the others take its shards without waiting
// for an expiry; a member that crashes or is cut off loses its shards to the others only after
// its leases expired on the server, and never two claims at once; keys of another shape under
// NAME/ are ignored; a shard's claim counts only keep-alives a read confirmed in the same raft
// term; and a randomized run with faults in which no shard is ever claimed twice.
#include "etcd/EtcdShardGroup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "MemoryEtcd.h"
#include "shard/ShardAssignment.h"
#include "shard/ShardMode.h"

namespace leasehold::etcd::shard_group_test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr std::size_t kShards = 4;

struct Member {
  Member(time::FakeClock& clock, test::MemoryEtcd& etcd, const std::string& name,
         time::Duration drain)
      : identity(name), link(etcd) {
    shard::ShardModeConfig c;
    c.identity = name;
    c.group = "work";
    c.timings = test::testTimings();
    c.drain = drain;
    mode = std::make_unique<shard::ShardMode>(
        clock, c,
        std::make_unique<EtcdShardGroup>(
            clock, link, EtcdShardGroupConfig{name, "work", kShards, test::testTimings()}, logger),
        metrics, logger);
  }
  // shard -> fencing token, from /shards.
  std::map<int, std::int64_t> owned() const {
    std::map<int, std::int64_t> out;
    const json shards = json::parse(mode->json());
    for (const auto& o : shards["owned"])
      out[o["shard"].get<int>()] = o["fencingToken"].get<std::int64_t>();
    return out;
  }

  std::string identity;
  test::MemoryEtcd::Link link;
  publish::Metrics metrics;
  log::Logger logger{log::Format::kText, log::Level::kError};
  std::unique_ptr<shard::ShardMode> mode;
};

class EtcdShardGroupTest : public ::testing::Test {
 protected:
  // Members "a" and "b", started together and balanced (2 shards each).
  std::pair<Member&, Member&> twoBalanced() {
    auto& a = add("a");
    auto& b = add("b");
    a.mode->start();
    b.mode->start();
    balanced({"a", "b"}, 3s);
    return {a, b};
  }
  Member& add(const std::string& name, time::Duration drain = 0s) {
    members.push_back(std::make_unique<Member>(clock, etcd, name, drain));
    return *members.back();
  }
  void settle(time::Duration d = 0s) {
    const auto until = clock.now() + d;
    do {
      for (int i = 0; i < 20; ++i)
        clock.runDue();
      if (clock.now() >= until) break;
      clock.advance(std::min<time::Duration>(100ms, until - clock.now()));
    } while (true);
  }
  // Every shard claimed by at most one member (checked by every caller at every step it takes).
  std::vector<std::string> claims() const {
    std::vector<std::string> owner(kShards);
    for (const auto& m : members) {
      if (!m->mode) continue;
      for (const auto& [shard, token] : m->owned()) {
        EXPECT_EQ(owner[shard], "")
            << "shard " << shard << " claimed by " << owner[shard] << " and " << m->identity;
        owner[shard] = m->identity;
      }
    }
    return owner;
  }
  // Advances in 100 ms steps, checking claims at each, until every shard is claimed by a
  // member in `who` with a balanced count, or `limit` passed. Returns the time it took.
  time::Duration balanced(const std::vector<std::string>& who, time::Duration limit) {
    const auto start = clock.now();
    while (clock.now() - start <= limit) {
      const auto owner = claims();
      std::map<std::string, std::size_t> count;
      bool all = true;
      for (const auto& o : owner) {
        all = all && std::find(who.begin(), who.end(), o) != who.end();
        count[o]++;
      }
      const std::size_t low = kShards / who.size(), high = (kShards + who.size() - 1) / who.size();
      bool even = all && count.size() == who.size();
      for (const auto& [name, n] : count)
        even = even && n >= low && n <= high;
      if (even) return clock.now() - start;
      settle(100ms);
    }
    ADD_FAILURE() << "not balanced over " << who.size() << " members within "
                  << time::formatDuration(limit);
    return limit;
  }

  // Every shard's election holds its owner's key only: nobody else waits in a queue.
  void onlyOwnersQueue() {
    const auto owner = claims();
    for (std::size_t i = 0; i < kShards; i++) {
      const auto keys = etcd.keysUnder("work/shards/" + std::to_string(i) + "/");
      ASSERT_EQ(keys.size(), 1u) << "shard " << i;
      EXPECT_EQ(keys[0].value, owner[i]) << "shard " << i;
    }
  }

  time::FakeClock clock;
  test::MemoryEtcd etcd{clock};
  std::vector<std::unique_ptr<Member>> members;
};

TEST_F(EtcdShardGroupTest, TwoMembersSplitTheShardsInEtcdsElectionLayout) {
  auto [a, b] = twoBalanced();
  // Membership: one key per member under work/members/, attached to a lease.
  const auto memberKeys = etcd.keysUnder("work/members/");
  ASSERT_EQ(memberKeys.size(), 2u);
  for (const auto& k : memberKeys)
    EXPECT_NE(k.lease, 0);
  // Each shard: one key (its owner's), whose create revision is the owner's token.
  const auto owner = claims();
  for (std::size_t i = 0; i < kShards; i++) {
    const auto keys = etcd.keysUnder("work/shards/" + std::to_string(i) + "/");
    ASSERT_EQ(keys.size(), 1u) << "shard " << i << ": only its owner queues";
    EXPECT_EQ(keys[0].value, owner[i]);
    const auto& m = owner[i] == "a" ? a : b;
    EXPECT_EQ(m.owned().at(static_cast<int>(i)), keys[0].createRevision);
  }
  const auto j = json::parse(a.mode->json());
  EXPECT_EQ(j["members"], 2);
  ASSERT_FALSE(j["owned"].empty());
  const int first = j["owned"][0]["shard"];
  EXPECT_EQ(j["owned"][0]["lease"], "work/shards/" + std::to_string(first));
}

TEST_F(EtcdShardGroupTest, AJoiningMemberTakesItsShareAndOnlyItsShareMoves) {
  twoBalanced();
  const auto before = claims();
  auto& c = add("c");
  c.mode->start();
  balanced({"a", "b", "c"}, 3s);
  const auto after = claims();
  std::size_t moved = 0;
  for (std::size_t i = 0; i < kShards; i++) {
    if (before[i] == after[i]) continue;
    moved++;
    EXPECT_EQ(after[i], "c") << "shard " << i << " moved, but not to the newcomer";
  }
  EXPECT_EQ(moved, c.owned().size());
  // No key of a member that is not assigned the shard is left waiting in a queue.
  settle(2s);
  const auto owner = claims();
  for (std::size_t i = 0; i < kShards; i++)
    EXPECT_EQ(etcd.keysUnder("work/shards/" + std::to_string(i) + "/").size(), 1u) << i;
  EXPECT_EQ(owner, after);
}

// With a drain, a newcomer's key waits in the queue of a shard moving to it; when another member
// leaves meanwhile, the assignment may leave that shard where it is: the waiting key then leaves
// the queue (else it would take the shard when its holder goes, and be moved back).
TEST_F(EtcdShardGroupTest, AKeyWaitingForAShardNoLongerAssignedHereLeavesTheQueue) {
  for (const char* name : {"a", "b", "c", "d", "e"})
    add(name, 2s);
  for (std::size_t m = 0; m < 2; m++)
    members[m]->mode->start();
  balanced({"a", "b"}, 3s);
  int waited = 0;
  for (std::size_t m = 2; m < members.size(); m++) {
    members[m]->mode->start();
    settle(500ms);
    for (std::size_t i = 0; i < kShards; i++)
      waited += etcd.keysUnder("work/shards/" + std::to_string(i) + "/").size() > 1;
    members[m - 2]->mode->shutdown(nullptr);
    settle(4s);
    onlyOwnersQueue();
  }
  EXPECT_GT(waited, 0) << "no key ever waited in a queue: the case was not exercised";
}

TEST_F(EtcdShardGroupTest, AMemberThatLeavesHandsItsShardsOverAtOnce) {
  auto [a, b] = twoBalanced();
  const auto aTokens = a.owned();
  bool done = false;
  a.mode->shutdown([&] { done = true; });
  EXPECT_TRUE(a.owned().empty()) << "nothing is owned from the shutdown on";
  settle();
  EXPECT_TRUE(done);
  EXPECT_EQ(etcd.keysUnder("work/members/").size(), 1u);
  // No expiry to wait for: the revokes delete the keys and b's watch hears it.
  EXPECT_LT(balanced({"b"}, 2s), 1s);
  // A new term on each shard b took: a higher token than a's.
  const auto bTokens = b.owned();
  for (const auto& [shard, token] : aTokens) {
    ASSERT_TRUE(bTokens.contains(shard)) << shard;
    EXPECT_GT(bTokens.at(shard), token) << shard;
  }
}

TEST_F(EtcdShardGroupTest, ACrashedMembersShardsMoveOnlyAfterItsLeasesExpire) {
  auto [a, b] = twoBalanced();
  const auto crashedAt = clock.now();
  a.mode.reset();  // kill -9: nothing revoked; the leases live on in etcd until D
  std::vector<std::string> owner;
  // Its last keep-alive was up to P before the crash: D - P after it, nothing can have moved.
  while (clock.now() - crashedAt < 5s - 1s - 100ms) {
    settle(100ms);
    owner = claims();
    EXPECT_EQ(std::count(owner.begin(), owner.end(), "b"), 2) << "before a's leases expired";
  }
  EXPECT_LT(balanced({"b"}, 4s), 2s);
}

TEST_F(EtcdShardGroupTest, ACutOffMemberStopsClaimingBeforeTheOthersTakeOver) {
  auto [a, b] = twoBalanced();
  a.link.setReachable(false);
  // claims() fails the test if a still claims a shard that b claims, at every 100 ms step.
  balanced({"b"}, 8s);
  EXPECT_TRUE(a.owned().empty());
  // Back: a rejoins and the group balances again.
  a.link.setReachable(true);
  balanced({"a", "b"}, 6s);
}

// The campaign's rule (a keep-alive counts once a read after it answers in the same raft term)
// holds for every shard; the membership, whose claim nobody asks, sends no read.
TEST_F(EtcdShardGroupTest, ShardClaimsCountOnlyConfirmedKeepAlivesAndMembershipSendsNoRead) {
  twoBalanced();
  etcd.countedKeys.clear();
  settle(3s);
  ASSERT_GE(etcd.countedKeys.size(), 2 * kShards);
  for (const auto& key : etcd.countedKeys)
    EXPECT_EQ(key.rfind("work/shards/", 0), 0u) << key;
  // From now on a raft leader that lost its term answers every keep-alive: R after the last
  // confirmed renewal (at most P ago), no shard is claimed, although every keep-alive since
  // was answered with a TTL.
  etcd.staleKeepAliveTerm = 2;
  settle(3s);
  for (const auto& owner : claims())
    EXPECT_EQ(owner, "");
}

TEST_F(EtcdShardGroupTest, KeysOfAnotherShapeUnderThePrefixAreIgnored) {
  etcd.put("work/notes", "x");
  etcd.put("work/shards/9/abc", "stranger");   // a shard this group does not have
  etcd.put("work/shards/01/abc", "stranger");  // not a shard number
  etcd.put("work/members/x/y", "stranger");    // not a member key
  auto& a = add("a");
  a.mode->start();
  balanced({"a"}, 3s);
  EXPECT_EQ(json::parse(a.mode->json())["members"], 1);
}

// Four members, each on its own link, under random faults (a member cut off, crashed and
// restarted, shut down and started again; the store slow or losing answers): at every 100 ms
// step no shard is claimed by two members, and each shard's new term has a higher token than
// every earlier one. Healed, the group ends balanced over all four.
TEST(EtcdShardGroupRandomTest, UnderRandomFaultsNoShardIsClaimedTwiceAndTokensOnlyGoUp) {
  int terms = 0;
  for (unsigned seed = 1; seed <= 12; ++seed) {
    std::mt19937 random(seed);
    time::FakeClock clock;
    test::MemoryEtcd etcd(clock);
    std::vector<std::unique_ptr<Member>> members(4);
    std::vector<char> down(members.size(), 0);  // shut down, not started again yet
    const auto restart = [&](std::size_t i) {
      down[i] = 0;
      members[i].reset();  // kill -9: nothing revoked
      members[i] = std::make_unique<Member>(clock, etcd, std::string(1, static_cast<char>('a' + i)),
                                            std::chrono::milliseconds(random() % 2 ? 0 : 500));
      members[i]->mode->start();
    };
    for (std::size_t i = 0; i < members.size(); ++i)
      restart(i);
    std::vector<std::int64_t> highest(kShards, 0);
    std::vector<std::string> holder(kShards);
    const auto step = [&](int n) {
      clock.advance(100ms);
      std::vector<std::string> owner(kShards);
      for (const auto& m : members) {
        for (const auto& [shard, token] : m->owned()) {
          ASSERT_EQ(owner[shard], "") << "seed " << seed << " step " << n << ": shard " << shard
                                      << " claimed by " << owner[shard] << " and " << m->identity;
          owner[shard] = m->identity;
          if (token == highest[shard] && holder[shard] == m->identity) continue;
          ASSERT_GT(token, highest[shard])
              << "seed " << seed << " step " << n << " shard " << shard;
          highest[shard] = token;
          holder[shard] = m->identity;
          ++terms;
        }
      }
    };
    for (int n = 0; n < 600; ++n) {
      const int dice = static_cast<int>(random() % 100);
      const std::size_t who = random() % members.size();
      if (dice < 3) members[who]->link.setReachable(!members[who]->link.reachable());
      if (dice == 3) restart(who);
      if (dice == 4 && !down[who]) {
        down[who] = 1;
        members[who]->mode->shutdown(nullptr);
      } else if (dice == 4) {
        restart(who);
      }
      if (dice == 5) etcd.loseAnswers = random() % 4 == 0;
      if (dice == 6) etcd.latency = std::chrono::milliseconds(random() % 1500);
      step(n);
      if (::testing::Test::HasFatalFailure()) return;
    }
    // Healed: every member reachable and running, the store prompt.
    etcd.loseAnswers = false;
    etcd.latency = 0ms;
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (down[i]) restart(i);
      members[i]->link.setReachable(true);
    }
    bool even = false;
    for (int n = 0; n < 150 && !even; ++n) {  // 15 s: expiries (D = 5 s), retries, moves
      step(600 + n);
      if (::testing::Test::HasFatalFailure()) return;
      std::map<std::string, std::size_t> count;
      for (const auto& m : members)
        count[m->identity] = m->owned().size();
      even = true;
      for (const auto& [name, c] : count)
        even = even && c == kShards / members.size();
    }
    EXPECT_TRUE(even) << "seed " << seed << ": not balanced 15 s after the heal";
  }
  EXPECT_GT(terms, 100) << "enough terms to have tested something";
}

}  // namespace
}  // namespace leasehold::etcd::shard_group_test

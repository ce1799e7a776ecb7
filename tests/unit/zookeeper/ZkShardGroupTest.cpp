// Shard mode on ZooKeeper: shard::ShardMode over zookeeper::ZkShardGroup, several members on one
// MemoryZooKeeper (each with its own client, so that one can be cut off or killed) and the
// FakeClock. What it checks: the group's znodes live under /NAME in kazoo's layout
// (/work/members/<uuid>__lock__<seq> and /work/shards/i/<uuid>__lock__<seq>, ephemeral, data =
// identity), all of a member's nodes on ONE session; the shards end balanced over the members
// and each is owned by exactly one of them, with its node's czxid as token; a member has a node
// in a shard's election only while the shard is assigned to it; a member that leaves (shutdown)
// deletes its membership at once and the others take its shards without waiting for an expiry;
// a member that crashes or is cut off loses its shards to the others only after its session
// expired, and never two claims at once; children that are not contenders are ignored; and a
// randomized run with faults in which no shard is ever claimed twice. ZkSharedSession alone:
// one open, every view hears the session's events, a view opened late hears kConnected.
#include "zookeeper/ZkShardGroup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "MemoryZooKeeper.h"
#include "shard/ShardMode.h"
#include "zookeeper/ZkSharedSession.h"

namespace leasehold::zookeeper::shard_group_test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using test::MemoryZooKeeper;

constexpr std::size_t kShards = 4;

std::string shardPath(std::size_t i) {
  return "/work/shards/" + std::to_string(i);
}

struct Member {
  Member(time::FakeClock& clock, MemoryZooKeeper& zk, const std::string& name, time::Duration drain)
      : identity(name), client(std::make_unique<MemoryZooKeeper::Client>(zk)) {
    shard::ShardModeConfig c;
    c.identity = name;
    c.group = "work";
    c.timings = test::testTimings();
    c.drain = drain;
    mode = std::make_unique<shard::ShardMode>(
        clock, c,
        std::make_unique<ZkShardGroup>(
            clock, *client,
            ZkShardGroupConfig{name, "work", kShards, test::testTimings(), test::testServerLag()},
            logger),
        metrics, logger);
  }
  ~Member() { mode.reset(); }
  // shard -> fencing token, from /shards.
  std::map<int, std::int64_t> owned() const {
    std::map<int, std::int64_t> out;
    if (!mode) return out;
    const json shards = json::parse(mode->json());
    for (const auto& o : shards["owned"])
      out[o["shard"].get<int>()] = o["fencingToken"].get<std::int64_t>();
    return out;
  }
  // kill -9: nothing deleted; the session lives on in ZooKeeper until it expires.
  void crash() {
    mode.reset();
    client.reset();
  }

  std::string identity;
  std::unique_ptr<MemoryZooKeeper::Client> client;
  publish::Metrics metrics;
  log::Logger logger{log::Format::kText, log::Level::kError};
  std::unique_ptr<shard::ShardMode> mode;
};

class ZkShardGroupTest : public ::testing::Test {
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
    members.push_back(std::make_unique<Member>(clock, zk, name, drain));
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
  // Shard i's contenders' identities (the nodes' data), in the election's order.
  std::vector<std::string> queue(std::size_t i) const {
    std::vector<std::string> out;
    for (const auto& c : zk.children(shardPath(i))) {
      if (contenderSequence(c)) out.push_back(zk.get(shardPath(i) + "/" + c)->data);
    }
    return out;
  }
  // Every shard's election holds its owner's node only: nobody else waits in a queue.
  void onlyOwnersQueue() {
    const auto owner = claims();
    for (std::size_t i = 0; i < kShards; i++)
      EXPECT_EQ(queue(i), std::vector<std::string>{owner[i]}) << "shard " << i;
  }

  time::FakeClock clock;
  MemoryZooKeeper zk{clock};
  std::vector<std::unique_ptr<Member>> members;
};

TEST_F(ZkShardGroupTest, TwoMembersSplitTheShardsInKazoosLayoutOnOneSessionEach) {
  auto [a, b] = twoBalanced();
  // Membership: one ephemeral node per member under /work/members, data = identity.
  const auto memberNodes = zk.children("/work/members");
  ASSERT_EQ(memberNodes.size(), 2u);
  std::map<std::string, std::int64_t> sessionOf;
  for (const auto& n : memberNodes) {
    ASSERT_TRUE(contenderSequence(n)) << n;
    const auto node = zk.get("/work/members/" + n);
    EXPECT_NE(node->stat.ephemeralOwner, 0);
    sessionOf[node->data] = node->stat.ephemeralOwner;
  }
  ASSERT_EQ(sessionOf.size(), 2u);
  EXPECT_EQ(sessionOf["a"], a.client->sessionId());
  EXPECT_EQ(sessionOf["b"], b.client->sessionId());
  // Each shard: one node (its owner's, on the owner's one session), whose czxid is the token.
  const auto owner = claims();
  for (std::size_t i = 0; i < kShards; i++) {
    const auto children = zk.children(shardPath(i));
    ASSERT_EQ(children.size(), 1u) << "shard " << i << ": only its owner queues";
    const auto node = zk.get(shardPath(i) + "/" + children[0]);
    EXPECT_EQ(node->data, owner[i]);
    EXPECT_EQ(node->stat.ephemeralOwner, sessionOf[owner[i]]);
    const auto& m = owner[i] == "a" ? a : b;
    EXPECT_EQ(m.owned().at(static_cast<int>(i)), node->stat.czxid);
  }
  const auto j = json::parse(a.mode->json());
  EXPECT_EQ(j["members"], 2);
  ASSERT_FALSE(j["owned"].empty());
  const int first = j["owned"][0]["shard"];
  EXPECT_EQ(j["owned"][0]["lease"], "work/shards/" + std::to_string(first));
}

TEST_F(ZkShardGroupTest, AJoiningMemberTakesItsShareAndOnlyItsShareMoves) {
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
  settle(2s);
  onlyOwnersQueue();
  EXPECT_EQ(claims(), after);
}

// With a drain, a newcomer's node waits in the queue of a shard moving to it; when another
// member leaves meanwhile, the assignment may leave that shard where it is: the waiting node then
// leaves the queue (else it would take the shard when its holder goes, and be moved back).
TEST_F(ZkShardGroupTest, ANodeWaitingForAShardNoLongerAssignedHereLeavesTheQueue) {
  for (const char* name : {"a", "b", "c", "d", "e"})
    add(name, 2s);
  for (std::size_t m = 0; m < 2; m++)
    members[m]->mode->start();
  balanced({"a", "b"}, 3s);
  int waited = 0;
  for (std::size_t m = 2; m < members.size(); m++) {
    members[m]->mode->start();
    for (int t = 0; t < 5; t++) {
      settle(100ms);
      for (std::size_t i = 0; i < kShards; i++)
        waited += queue(i).size() > 1;
    }
    members[m - 2]->mode->shutdown(nullptr);
    settle(4s);
    onlyOwnersQueue();
  }
  EXPECT_GT(waited, 0) << "no node ever waited in a queue: the case was not exercised";
}

TEST_F(ZkShardGroupTest, AMemberThatLeavesHandsItsShardsOverAtOnce) {
  auto [a, b] = twoBalanced();
  const auto aTokens = a.owned();
  bool done = false;
  a.mode->shutdown([&] { done = true; });
  EXPECT_TRUE(a.owned().empty()) << "nothing is owned from the shutdown on";
  settle();
  EXPECT_TRUE(done);
  EXPECT_EQ(zk.children("/work/members").size(), 1u);
  // No expiry to wait for: the deletes fire b's watches.
  EXPECT_LT(balanced({"b"}, 2s), 1s);
  const auto bTokens = b.owned();
  for (const auto& [shard, token] : aTokens) {
    ASSERT_TRUE(bTokens.contains(shard)) << shard;
    EXPECT_GT(bTokens.at(shard), token) << shard;
  }
}

TEST_F(ZkShardGroupTest, ACrashedMembersShardsMoveOnlyAfterItsSessionExpires) {
  auto [a, b] = twoBalanced();
  const auto crashedAt = clock.now();
  a.crash();  // kill -9: its session lives on until T = 6 s after the servers last heard of it
  while (clock.now() - crashedAt < zk.sessionTimeout - 100ms) {
    settle(100ms);
    const auto owner = claims();
    EXPECT_EQ(std::count(owner.begin(), owner.end(), "b"), 2) << "before a's session expired";
  }
  EXPECT_LT(balanced({"b"}, 3s), 1s);
  EXPECT_EQ(zk.children("/work/members").size(), 1u);
}

TEST_F(ZkShardGroupTest, AMemberWhoseSessionExpiresRejoinsOnANewOne) {
  auto [a, b] = twoBalanced();
  const auto old = *a.client->sessionId();
  zk.expireSession(old);
  // Its nodes went with the session: b takes everything at once, then a comes back.
  settle(500ms);
  claims();
  balanced({"a", "b"}, 6s);
  ASSERT_TRUE(a.client->sessionId());
  EXPECT_NE(*a.client->sessionId(), old);
  for (const auto& n : zk.children("/work/members"))
    EXPECT_NE(zk.get("/work/members/" + n)->stat.ephemeralOwner, old);
}

TEST_F(ZkShardGroupTest, ACutOffMemberStopsClaimingBeforeTheOthersTakeOver) {
  auto [a, b] = twoBalanced();
  a.client->setReachable(false);
  // claims() fails the test if a still claims a shard that b claims, at every 100 ms step.
  balanced({"b"}, 9s);
  EXPECT_TRUE(a.owned().empty());
  a.client->setReachable(true);
  balanced({"a", "b"}, 8s);
}

TEST_F(ZkShardGroupTest, ChildrenThatAreNotContendersAreIgnored) {
  zk.create("/work", "", ZkCreateMode::kPersistent);
  zk.create("/work/notes", "x", ZkCreateMode::kPersistent);
  zk.create("/work/members", "", ZkCreateMode::kPersistent);
  zk.create("/work/members/stranger", "x", ZkCreateMode::kPersistent);
  zk.create("/work/shards", "", ZkCreateMode::kPersistent);
  zk.create("/work/shards/9", "", ZkCreateMode::kPersistent);  // a shard this group lacks
  zk.create("/work/shards/1", "", ZkCreateMode::kPersistent);
  zk.create("/work/shards/1/stranger", "x", ZkCreateMode::kPersistent);
  auto& a = add("a");
  a.mode->start();
  balanced({"a"}, 3s);
  EXPECT_EQ(json::parse(a.mode->json())["members"], 1);
}

// Four members, each on its own client, under random faults (a member cut off, crashed and
// restarted, shut down and started again; its session expired; answers slow or lost): at every
// 100 ms step no shard is claimed by two members, and each shard's new term has a higher token
// than every earlier one. Healed, the group ends balanced over all four.
TEST(ZkShardGroupRandomTest, UnderRandomFaultsNoShardIsClaimedTwiceAndTokensOnlyGoUp) {
  int terms = 0;
  for (unsigned seed = 1; seed <= 8; ++seed) {
    std::mt19937 random(seed);
    time::FakeClock clock;
    MemoryZooKeeper zk(clock);
    std::vector<std::unique_ptr<Member>> members(4);
    std::vector<char> down(members.size(), 0);
    const auto restart = [&](std::size_t i) {
      down[i] = 0;
      if (members[i]) members[i]->crash();
      members[i].reset();
      members[i] = std::make_unique<Member>(clock, zk, std::string(1, static_cast<char>('a' + i)),
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
      auto& client = *members[who]->client;
      if (dice < 3) client.setReachable(!client.reachable());
      if (dice == 3) restart(who);
      if (dice == 4 && !down[who]) {
        down[who] = 1;
        members[who]->mode->shutdown(nullptr);
      } else if (dice == 4) {
        restart(who);
      }
      // The servers end a session they hear from (an expiry as ZooKeeper does it comes T after
      // the client was cut off: the cut-off and the crash above).
      if (dice == 5 && client.reachable() && client.latency == 0ms && client.sessionId()) {
        zk.expireSession(*client.sessionId());
      }
      if (dice == 6) client.latency = std::chrono::milliseconds(random() % 1500);
      if (dice == 7) client.dropConnection();
      step(n);
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (down[i]) restart(i);
      members[i]->client->setReachable(true);
      members[i]->client->latency = 0ms;
    }
    bool even = false;
    for (int n = 0; n < 200 && !even; ++n) {  // 20 s: expiries (T = 6 s), retries, moves
      step(600 + n);
      if (::testing::Test::HasFatalFailure()) return;
      even = true;
      for (const auto& m : members)
        even = even && m->owned().size() == kShards / members.size();
    }
    EXPECT_TRUE(even) << "seed " << seed << ": not balanced 20 s after the heal";
  }
  EXPECT_GT(terms, 60) << "enough terms to have tested something";
}

// ---- ZkSharedSession ------------------------------------------------------------------------

TEST(ZkSharedSessionTest, OpensOnceAndEveryViewHearsTheSessionALateOneToo) {
  time::FakeClock clock;
  MemoryZooKeeper zk(clock);
  MemoryZooKeeper::Client client(zk);
  ZkSharedSession shared(clock, client);
  auto first = shared.share();
  auto second = shared.share();
  std::vector<std::string> heard;
  first->setSessionHandler([&](const ZkSessionEvent& e) {
    if (e.kind == ZkSessionEvent::Kind::kConnected) heard.push_back("first");
  });
  second->setSessionHandler([&](const ZkSessionEvent& e) {
    if (e.kind == ZkSessionEvent::Kind::kConnected) heard.push_back("second");
  });
  first->open();
  second->open();
  clock.advance(10ms);
  EXPECT_EQ(heard, (std::vector<std::string>{"first", "second"}));
  // A view made and opened once connected hears kConnected on the loop, not inside open().
  auto late = shared.share();
  std::optional<ZkSessionEvent> lateHeard;
  late->setSessionHandler([&](const ZkSessionEvent& e) { lateHeard = e; });
  late->open();
  EXPECT_FALSE(lateHeard);
  clock.advance(10ms);
  ASSERT_TRUE(lateHeard);
  EXPECT_EQ(lateHeard->kind, ZkSessionEvent::Kind::kConnected);
  EXPECT_EQ(lateHeard->sessionId, *client.sessionId());
  // A view opened after it heard the session hears it again as the same session, not a new one.
  heard.clear();
  std::optional<ZkSessionEvent> secondAgain;
  second->setSessionHandler([&](const ZkSessionEvent& e) { secondAgain = e; });
  second->open();
  clock.advance(10ms);
  ASSERT_TRUE(secondAgain);
  EXPECT_FALSE(secondAgain->newSession);
  // Expiry reaches every view; close() only detaches one (the session stays).
  bool closed = false;
  first->close([&] { closed = true; });
  EXPECT_FALSE(closed);
  clock.advance(10ms);
  EXPECT_TRUE(closed);
  int expired = 0;
  second->setSessionHandler(
      [&](const ZkSessionEvent& e) { expired += e.kind == ZkSessionEvent::Kind::kExpired; });
  late->setSessionHandler(
      [&](const ZkSessionEvent& e) { expired += e.kind == ZkSessionEvent::Kind::kExpired; });
  first->setSessionHandler([&](const ZkSessionEvent&) { ADD_FAILURE() << "closed view heard"; });
  const auto id = *client.sessionId();
  zk.expireSession(id);
  clock.advance(10ms);
  EXPECT_EQ(expired, 2);
  EXPECT_TRUE(zk.sessionAlive(*client.sessionId()));
}

}  // namespace
}  // namespace leasehold::zookeeper::shard_group_test

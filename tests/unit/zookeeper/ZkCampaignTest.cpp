// The ZooKeeper campaign on MemoryZooKeeper and the FakeClock: kazoo's layout, who leads with
// which token (the leader node's czxid), the predecessor watch (no herd), the claim rule (S + R,
// pauses, cut-off clients), sessions (expiry, reconnects, a timeout too short, refused
// credentials), a create without an answer, foreign children and kazoo contenders, release,
// eligibility, and a randomized run with faults in which two claims never overlap.
#include "zookeeper/ZkCampaign.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "MemoryZooKeeper.h"

namespace leasehold::zookeeper {
namespace {

using election::ElectorEvent;
using namespace std::chrono_literals;
using Kind = ElectorEvent::Kind;
using test::MemoryZooKeeper;

constexpr const char* kPath = "/election/app";

// Deterministic node prefixes: 30 times the candidate's letter, then a 2-digit counter.
std::function<std::string()> uuids(char letter) {
  auto n = std::make_shared<int>(0);
  return [letter, n] {
    char counter[8];
    std::snprintf(counter, sizeof counter, "%02x", (*n)++ & 0xff);
    return std::string(30, letter) + counter;
  };
}

struct Candidate {
  Candidate(time::FakeClock& clock, MemoryZooKeeper& zk, std::string name,
            election::ElectionTimings timings = test::testTimings(),
            time::Duration lag = test::testServerLag())
      : client(std::make_unique<MemoryZooKeeper::Client>(zk)),
        campaign(std::make_unique<ZkCampaign>(
            clock, *client, ZkCampaignConfig{name, kPath, timings, lag}, uuids(name[0]))) {
    campaign->setEventHandler([this](const ElectorEvent& e) { events.push_back(e); });
  }
  ~Candidate() { campaign.reset(); }
  bool leads() const { return campaign->leadership().leader; }
  std::int64_t token() const { return campaign->leadership().fencingToken.value_or(-1); }
  std::string node() const {
    return campaign->node() ? std::string(kPath) + "/" + *campaign->node() : "";
  }
  int count(Kind k) const {
    return static_cast<int>(
        std::count_if(events.begin(), events.end(), [k](const auto& e) { return e.kind == k; }));
  }
  std::string details(Kind k) const {
    std::string out;
    for (const auto& e : events) {
      if (e.kind == k) out += e.detail + "\n";
    }
    return out;
  }
  // kill -9: nothing more from this process; its session lives on the servers until T.
  void crash() {
    campaign.reset();
    client.reset();
  }
  std::unique_ptr<MemoryZooKeeper::Client> client;
  std::unique_ptr<ZkCampaign> campaign;
  std::vector<ElectorEvent> events;
};

class ZkCampaignTest : public ::testing::Test {
 protected:
  std::unique_ptr<Candidate> candidate(const std::string& name) {
    return std::make_unique<Candidate>(clock, zk, name);
  }
  std::unique_ptr<Candidate> started(const std::string& name) {
    auto c = candidate(name);
    c->campaign->start();
    settle();
    return c;
  }
  // Lets every answer that is due arrive (the fake's latency is zero unless a test sets it).
  void settle() {
    for (int i = 0; i < 20; ++i)
      clock.runDue();
  }
  std::vector<std::string> contenders() const { return zk.children(kPath); }

  time::FakeClock clock;
  MemoryZooKeeper zk{clock};
};

TEST_F(ZkCampaignTest, TheFirstCandidateLeadsInKazoosLayoutWithItsNodesCzxidAsToken) {
  auto a = candidate("a");
  a->campaign->start();
  EXPECT_FALSE(a->leads());
  settle();
  ASSERT_TRUE(a->leads());
  // The parents are persistent; the node is <32 hex>__lock__<10 digits>, ephemeral, data = id.
  ASSERT_TRUE(zk.get("/election"));
  EXPECT_EQ(zk.get("/election")->stat.ephemeralOwner, 0);
  const auto children = contenders();
  ASSERT_EQ(children.size(), 1u);
  EXPECT_EQ(children[0], std::string(30, 'a') + "00__lock__0000000000");
  const auto node = zk.get(std::string(kPath) + "/" + children[0]);
  EXPECT_EQ(node->data, "a");
  EXPECT_EQ(node->stat.ephemeralOwner, *a->client->sessionId());
  EXPECT_EQ(a->campaign->node(), children[0]);
  const auto l = a->campaign->leadership();
  EXPECT_EQ(l.holder, "a");
  EXPECT_EQ(l.fencingToken, node->stat.czxid);
  ASSERT_TRUE(l.validUntilMono);
  EXPECT_EQ(a->count(Kind::kAcquired), 1);
  EXPECT_EQ(a->events.back().token, node->stat.czxid);
  // The leader watches its own node, nothing else.
  EXPECT_EQ(a->client->existsWatches, std::vector<std::string>{a->node()});
  EXPECT_EQ(a->client->childWatches, 0);
}

TEST_F(ZkCampaignTest, TheLeaderPingsEveryPAndItsClaimEndsAtTheLastAnsweredSendPlusR) {
  auto a = candidate("a");
  const auto t0 = clock.now();
  a->campaign->start();
  settle();
  ASSERT_TRUE(a->leads());
  EXPECT_EQ(*a->campaign->leadership().validUntilMono, t0 + 3s);
  clock.advance(1s);  // the ping, sent at +1 s, answered at once
  EXPECT_EQ(a->client->count("ping"), 1);
  EXPECT_EQ(*a->campaign->leadership().validUntilMono, t0 + 1s + 3s);
  EXPECT_EQ(a->count(Kind::kRenewed), 1);
  clock.advance(9s);
  EXPECT_EQ(a->client->count("ping"), 10);
  EXPECT_EQ(a->count(Kind::kRenewed), 10);
  EXPECT_EQ(a->client->count("getChildren"), 1) << "the leader reads nothing more while it leads";
}

// S is the send time of the answered request, not its answer's arrival: the server may have
// heard of the session at any moment in between.
TEST_F(ZkCampaignTest, TheClaimCountsFromTheSendOfTheAnsweredPingNotItsAnswer) {
  auto a = started("a");
  ASSERT_TRUE(a->leads());
  const auto t0 = clock.now();
  a->client->latency = 400ms;
  clock.advance(1s);  // the ping goes out at t0 + 1 s
  EXPECT_EQ(a->client->count("ping"), 1);
  EXPECT_EQ(*a->campaign->leadership().validUntilMono, t0 + 3s) << "not answered yet";
  clock.advance(400ms);
  EXPECT_EQ(*a->campaign->leadership().validUntilMono, t0 + 1s + 3s);
  ASSERT_EQ(a->events.back().kind, Kind::kRenewed);
  EXPECT_EQ(a->events.back().latency, 400ms);
  EXPECT_EQ(*a->campaign->holdingWithoutRenewalFor(), 400ms);
}

TEST_F(ZkCampaignTest, PingsComeEveryRenewIntervalAndRetriesEveryP) {
  auto timings = test::testTimings();
  timings.leaseDuration = 20s;
  timings.renewDeadline = 12s;
  timings.renewInterval = 5s;
  zk.sessionTimeout = 20s;
  Candidate a(clock, zk, "a", timings);
  a.campaign->start();
  settle();
  ASSERT_TRUE(a.leads());
  clock.advance(4900ms);
  EXPECT_EQ(a.client->count("ping"), 0);
  clock.advance(200ms);
  EXPECT_EQ(a.client->count("ping"), 1);
  clock.advance(20s);
  EXPECT_EQ(a.client->count("ping"), 5);
  ZkResult refused;
  refused.kind = ZkResult::Kind::kRejected;
  refused.code = ZkCode::kMarshallingError;
  refused.message = "injected";
  a.client->failNext("ping", refused);
  clock.advance(5s);  // the next ping fails; its retry follows P (1 s) later
  EXPECT_EQ(a.client->count("ping"), 6);
  EXPECT_EQ(a.count(Kind::kRenewFailed), 1);
  clock.advance(1s);
  EXPECT_EQ(a.client->count("ping"), 7);
  EXPECT_TRUE(a.leads());
}

// The claim rule under every way a renewal can fail to come: it ends exactly at S + R, S the
// send time of the last answered request; a paused process answers false the instant it wakes.
TEST_F(ZkCampaignTest, TheClaimLapsesAtTheLastAnsweredSendPlusR) {
  struct Case {
    const char* name;
    std::function<void(Candidate&, MemoryZooKeeper&)> fault;
  };
  const std::vector<Case> cases = {
      {"cut off", [](Candidate& c, MemoryZooKeeper&) { c.client->setReachable(false); }},
      {"pings unanswered",
       [](Candidate& c, MemoryZooKeeper&) {
         for (int i = 0; i < 5; ++i)
           c.client->failNext("ping", ZkResult{});
       }},
      {"slow answers", [](Candidate& c, MemoryZooKeeper&) { c.client->latency = 5s; }},
      {"connection dropped, then cut off",
       [](Candidate& c, MemoryZooKeeper&) {
         c.client->dropConnection();
         c.client->setReachable(false);
       }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    time::FakeClock localClock;
    MemoryZooKeeper localZk(localClock);
    localZk.requestTimeout = 1s;  // a ping without answer fails before the deadline
    Candidate a(localClock, localZk, "a");
    a.campaign->start();
    for (int i = 0; i < 20; ++i)
      localClock.runDue();
    localClock.advance(1s);  // a ping answered: S = now
    const auto s = localClock.now();
    ASSERT_TRUE(a.leads());
    c.fault(a, localZk);
    localClock.advance(3s - 1ms);
    EXPECT_TRUE(a.leads());
    localClock.advance(1ms);
    EXPECT_FALSE(a.leads());
    EXPECT_EQ(localClock.now(), s + 3s);
    EXPECT_EQ(a.count(Kind::kSteppedDown), 1);
    EXPECT_NE(a.details(Kind::kSteppedDown).find("renew deadline (3s)"), std::string::npos);
    EXPECT_GE(a.count(Kind::kRenewFailed) + (c.name == std::string("slow answers")), 1);
    localClock.advance(10s);
    EXPECT_LE(a.count(Kind::kStoreFailed), 3) << "once per distinct problem, not every P\n"
                                              << a.details(Kind::kStoreFailed);
  }
}

TEST_F(ZkCampaignTest, APausedLeaderAnswersFalseTheInstantItWakes) {
  auto a = started("a");
  ASSERT_TRUE(a->leads());
  clock.jump(3s);  // SIGSTOP for R: no timer ran, no ping went out
  EXPECT_FALSE(a->leads());
}

TEST_F(ZkCampaignTest, AFollowerWatchesOnlyItsPredecessor) {
  auto a = started("a");
  auto b = started("b");
  auto c = started("c");
  auto d = started("d");
  ASSERT_TRUE(a->leads());
  for (const auto* x : {b.get(), c.get(), d.get()}) {
    EXPECT_FALSE(x->leads());
    EXPECT_EQ(x->campaign->leadership().holder, "a");
    EXPECT_EQ(x->campaign->leadership().fencingToken, a->token());
    EXPECT_EQ(x->client->childWatches, 0);
  }
  EXPECT_EQ(b->client->existsWatches, std::vector<std::string>{a->node()});
  EXPECT_EQ(c->client->existsWatches, std::vector<std::string>{b->node()});
  EXPECT_EQ(d->client->existsWatches, std::vector<std::string>{c->node()});
  // b goes: only c hears of it (and watches a now); d is not woken.
  const int dReads = d->client->count("getChildren");
  const int aReads = a->client->count("getChildren");
  const auto bNode = b->node();
  b->campaign->stop(nullptr);
  settle();
  EXPECT_EQ(c->client->existsWatches, (std::vector<std::string>{bNode, a->node()}));
  EXPECT_EQ(d->client->count("getChildren"), dReads);
  EXPECT_EQ(a->client->count("getChildren"), aReads);
  EXPECT_EQ(d->client->liveWatches(), 1);
  // a goes: c leads at once, d still waits behind c.
  a->campaign->stop(nullptr);
  settle();
  EXPECT_TRUE(c->leads());
  EXPECT_FALSE(d->leads());
  EXPECT_EQ(d->campaign->leadership().holder, "a") << "d has not read since";
  clock.advance(1s);  // d's periodic read: the new holder
  EXPECT_EQ(d->campaign->leadership().holder, "c");
  EXPECT_EQ(d->count(Kind::kNewLeaderObserved), 2);
}

TEST_F(ZkCampaignTest, ACrashedLeaderIsFollowedOnlyOnceItsSessionExpired) {
  auto a = started("a");
  auto b = started("b");
  const auto aToken = a->token();
  clock.advance(1s);
  a->crash();  // the servers last heard of a's session now
  const auto crashedAt = clock.now();
  clock.advance(6s - 1ms);  // T = 6 s
  EXPECT_FALSE(b->leads());
  clock.advance(1ms);
  settle();
  EXPECT_TRUE(b->leads());
  EXPECT_EQ(clock.now(), crashedAt + 6s);
  EXPECT_GT(b->token(), aToken);
}

TEST_F(ZkCampaignTest, TokensAreCzxidsAndGoUpEvenWhenThePathIsCreatedAnew) {
  auto a = started("a");
  const auto first = a->token();
  const auto firstNode = *a->campaign->node();
  a->campaign->stop(nullptr);
  settle();
  zk.remove(kPath);  // somebody tidies up: the sequence counter starts again
  auto b = started("b");
  ASSERT_TRUE(b->leads());
  EXPECT_EQ(b->campaign->node()->substr(40), firstNode.substr(40)) << "the same sequence";
  EXPECT_GT(b->token(), first);
  EXPECT_EQ(b->token(), zk.get(b->node())->stat.czxid);
}

TEST_F(ZkCampaignTest, ACreateWithoutAnswerAdoptsItsNodeByPrefix) {
  auto a = candidate("a");
  a->client->loseNextAnswer("create", "__lock__");  // applied, never answered
  a->campaign->start();
  settle();
  EXPECT_FALSE(a->leads());
  ASSERT_EQ(contenders().size(), 1u);
  clock.advance(2s);  // the request times out, the connection drops and comes back
  settle();
  ASSERT_TRUE(a->leads());
  const auto children = contenders();
  ASSERT_EQ(children.size(), 1u) << "no second node";
  EXPECT_EQ(a->campaign->node(), children[0]);
  EXPECT_EQ(a->token(), zk.get(a->node())->stat.czxid);
  // The path's two parts and the node; then a look for our prefix and a read of its Stat.
  EXPECT_EQ(a->client->count("create"), 3);
  EXPECT_GE(a->client->count("getChildren"), 1);
}

TEST_F(ZkCampaignTest, AnAdoptedNodeKeepsItsPlaceInTheQueue) {
  auto a = started("a");
  auto b = candidate("b");
  b->client->loseNextAnswer("create", "__lock__");
  b->campaign->start();
  settle();
  auto c = started("c");  // queues behind b's node, which b does not know of yet
  clock.advance(2s);
  settle();
  ASSERT_EQ(contenders().size(), 3u);
  EXPECT_EQ(c->client->existsWatches, std::vector<std::string>{b->node()});
  a->campaign->stop(nullptr);
  settle();
  EXPECT_TRUE(b->leads());
  EXPECT_FALSE(c->leads());
}

// Children that are not contenders (kazoo's read lock's __rlock__, another sequence's width,
// anything else) neither lead nor block; they are named once in the log, not at every read.
TEST_F(ZkCampaignTest, ForeignChildrenAreIgnoredAndNamedOnceInTheLog) {
  zk.create("/election", "", ZkCreateMode::kPersistent);
  zk.create(kPath, "", ZkCreateMode::kPersistent);
  for (const char* name : {"config", "old__lock__12", "abc__rlock__0000000000",
                           "abc__lock__00000000001", "abc__lock__000000000x"}) {
    zk.create(std::string(kPath) + "/" + name, "x", ZkCreateMode::kPersistent);
  }
  auto b = started("b");
  EXPECT_TRUE(b->leads());
  EXPECT_EQ(b->campaign->leadership().holder, "b");
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  const log::Logger logger(log::Format::kText, log::Level::kInfo, fileno(file));
  MemoryZooKeeper::Client client(zk);
  ZkCampaign a(clock, client, ZkCampaignConfig{"a", kPath, test::testTimings(), 1s}, uuids('a'),
               &logger);
  a.start();
  settle();
  clock.advance(5s);  // a follows, and reads the children every P
  EXPECT_GE(client.count("getChildren"), 5);
  EXPECT_FALSE(a.leadership().leader);
  EXPECT_EQ(a.leadership().holder, "b");
  EXPECT_TRUE(b->leads());
  EXPECT_EQ(contenders().size(), 7u);
  std::fflush(file);
  std::rewind(file);
  std::string logged;
  char buffer[4096];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, file))
    logged.append(buffer, n);
  std::fclose(file);
  const auto said = logged.find("not contenders");
  ASSERT_NE(said, std::string::npos) << logged;
  EXPECT_EQ(logged.find("not contenders", said + 1), std::string::npos) << "said once: " << logged;
  EXPECT_NE(logged.find("abc__rlock__0000000000"), std::string::npos) << logged;
}

// A kazoo `client.Election(path, identifier)` contender: the same layout, on another session.
TEST_F(ZkCampaignTest, AKazooContenderCompetesOnThePath) {
  struct Case {
    const char* identifier;
    bool holderIsNodeName;
  };
  for (const auto& c : {Case{"kazoo-1", false}, Case{"", true}}) {
    SCOPED_TRACE(c.identifier);
    time::FakeClock localClock;
    MemoryZooKeeper localZk(localClock);
    localZk.create("/election", "", ZkCreateMode::kPersistent);
    localZk.create(kPath, "", ZkCreateMode::kPersistent);
    const auto kazoo = localZk.openSession();
    const std::string node =
        localZk.create(std::string(kPath) + "/0123456789abcdef0123456789abcdef__lock__",
                       c.identifier, ZkCreateMode::kEphemeralSequential, kazoo);
    Candidate a(localClock, localZk, "a");
    a.campaign->start();
    for (int i = 0; i < 20; ++i)
      localClock.runDue();
    EXPECT_FALSE(a.leads());
    const auto l = a.campaign->leadership();
    EXPECT_EQ(l.holder, c.holderIsNodeName ? node.substr(std::string(kPath).size() + 1)
                                           : std::string(c.identifier));
    EXPECT_EQ(l.fencingToken, localZk.get(node)->stat.czxid);
    EXPECT_EQ(a.client->existsWatches, std::vector<std::string>{node});
    localClock.advance(10s);
    EXPECT_FALSE(a.leads());
    localZk.expireSession(kazoo);  // the kazoo process went away
    for (int i = 0; i < 20; ++i)
      localClock.runDue();
    EXPECT_TRUE(a.leads());
    EXPECT_GT(a.token(), *l.fencingToken);
    // And kazoo queues behind it: the next sequence.
    const auto kazoo2 = localZk.openSession();
    localZk.create(std::string(kPath) + "/fedcba9876543210fedcba9876543210__lock__", "kazoo-2",
                   ZkCreateMode::kEphemeralSequential, kazoo2);
    localClock.advance(2s);
    EXPECT_TRUE(a.leads());
  }
}

// kazoo's order: by the captured sequence as a string, whatever comes before __lock__, so a
// sequence that overflowed to a negative number sorts first (as kazoo sorts it).
TEST_F(ZkCampaignTest, TheQueueIsInKazoosOrderOfTheSequenceSuffix) {
  zk.create("/election", "", ZkCreateMode::kPersistent);
  zk.create(kPath, "", ZkCreateMode::kPersistent);
  const auto kazoo = zk.openSession();
  const std::string path(kPath);
  zk.create(path + "/zzzz__lock__0000000007", "late", ZkCreateMode::kEphemeral, kazoo);
  zk.create(path + "/ffff__lock__-2147483648", "wrapped", ZkCreateMode::kEphemeral, kazoo);
  auto a = started("a");  // its sequence: the parent's cversion, 2
  EXPECT_EQ(a->campaign->node()->substr(32), "__lock__0000000002");
  EXPECT_FALSE(a->leads());
  EXPECT_EQ(a->campaign->leadership().holder, "wrapped");
  EXPECT_EQ(a->client->existsWatches, std::vector<std::string>{path + "/ffff__lock__-2147483648"});
  zk.remove(path + "/ffff__lock__-2147483648");
  settle();
  EXPECT_TRUE(a->leads()) << "zzzz__lock__0000000007 comes after a's node";
}

// Stopped while its create is on its way: the node it gets is deleted as soon as it is known.
TEST_F(ZkCampaignTest, ANodeCreatedAfterStopIsDeletedAtOnce) {
  auto a = candidate("a");
  a->client->latency = 100ms;
  a->campaign->start();
  while (a->client->count("create") < 3)
    clock.advance(10ms);
  ASSERT_EQ(contenders().size(), 1u);  // applied; its answer is on its way
  bool stopped = false;
  a->campaign->stop([&] { stopped = true; });
  EXPECT_TRUE(stopped) << "nothing of ours known to release";
  clock.advance(300ms);
  EXPECT_TRUE(contenders().empty());
  EXPECT_FALSE(a->leads());
  EXPECT_EQ(a->count(Kind::kAcquired), 0);
}

TEST_F(ZkCampaignTest, AnExpiredSessionEndsTheClaimAtOnceAndRejoinsWithAHigherToken) {
  auto a = started("a");
  auto b = started("b");
  const auto first = a->token();
  const auto session = *a->client->sessionId();
  zk.expireSession(session);
  EXPECT_FALSE(a->leads() && b->leads());
  settle();
  EXPECT_FALSE(a->leads());
  EXPECT_EQ(a->count(Kind::kSteppedDown), 1);
  EXPECT_TRUE(b->leads());
  EXPECT_NE(*a->client->sessionId(), session);
  ASSERT_TRUE(a->campaign->node());
  EXPECT_EQ(a->campaign->node()->substr(0, 32), std::string(30, 'a') + "01") << "a new prefix";
  const auto bToken = b->token();
  b->campaign->stop(nullptr);
  settle();
  ASSERT_TRUE(a->leads());
  EXPECT_GT(a->token(), bToken);
  EXPECT_GT(a->token(), first);
}

TEST_F(ZkCampaignTest, ACutOffLeaderIsReplacedOnlyAfterItsSessionExpiredAndThenRejoins) {
  auto a = started("a");
  auto b = started("b");
  clock.advance(1s);
  const auto s = clock.now();
  a->client->setReachable(false);
  std::optional<time::MonoTime> bLeads;
  while (clock.now() < s + 8s) {
    clock.advance(10ms);
    ASSERT_FALSE(a->leads() && b->leads());
    if (clock.now() >= s + 3s) {
      ASSERT_FALSE(a->leads());
    }
    if (b->leads() && !bLeads) bLeads = clock.now();
  }
  ASSERT_TRUE(bLeads);
  EXPECT_EQ(*bLeads, s + 6s);  // T after the servers last heard of a
  a->client->setReachable(true);
  settle();
  EXPECT_FALSE(a->leads());
  EXPECT_TRUE(a->campaign->node()) << "queued again on a new session";
  EXPECT_NE(a->details(Kind::kStoreFailed).find("session"), std::string::npos);
}

TEST_F(ZkCampaignTest, AReconnectToTheSameSessionReadsAgainAndSetsItsWatchAgain) {
  auto a = started("a");
  auto b = started("b");
  const auto token = a->token();
  b->client->dropConnection();
  a->client->dropConnection();
  settle();
  EXPECT_EQ(b->client->existsWatches, (std::vector<std::string>{a->node(), a->node()}));
  EXPECT_EQ(a->client->existsWatches, (std::vector<std::string>{a->node(), a->node()}));
  EXPECT_TRUE(a->leads());
  EXPECT_EQ(a->token(), token);
  EXPECT_EQ(a->count(Kind::kSteppedDown), 0) << "a disconnection alone changes nothing";
  a->campaign->stop(nullptr);
  settle();
  EXPECT_TRUE(b->leads());
}

// After a reconnect, nothing answered counts for the claim until the children were read again
// on the new connection: our watch went with the old one, and our node may have gone meanwhile.
TEST_F(ZkCampaignTest, AfterAReconnectOnlyAnswersAfterTheReadAgainCountForTheClaim) {
  auto a = started("a");
  const auto t0 = clock.now();
  const auto token = a->token();
  const auto node = a->node();
  a->client->latency = 300ms;
  clock.advance(1500ms);  // the ping at t0 + 1 s, answered at + 1.3 s
  ASSERT_EQ(a->count(Kind::kRenewed), 1);
  a->client->setReachable(false);  // kDisconnected at + 1.8 s
  clock.advance(100ms);
  zk.remove(node);  // somebody deletes it meanwhile; a's watch is gone
  clock.advance(300ms);
  a->client->setReachable(true);  // kConnected at + 2.2 s
  // + 2 s: the next ping and a read (the watch is gone), both answered at + 2.3 s, the ping
  // first, before the read that shows the node gone.
  clock.advance(t0 + 2300ms - clock.now());
  EXPECT_EQ(a->count(Kind::kRenewed), 1) << "a ping before the read counts for nothing";
  EXPECT_FALSE(a->leads() && *a->campaign->leadership().validUntilMono > t0 + 1s + 3s);
  clock.advance(1s);
  settle();
  EXPECT_EQ(a->count(Kind::kSteppedDown), 1);
  EXPECT_NE(a->details(Kind::kSteppedDown).find("is gone"), std::string::npos)
      << a->details(Kind::kSteppedDown);
  EXPECT_TRUE(a->leads()) << "alone, it queued again and leads a new term";
  EXPECT_GT(a->token(), token);
}

// The timeout is negotiated again on every reconnect: too short, and the candidate leaves the
// queue (a leader stops claiming at once) until a connection brings enough.
TEST_F(ZkCampaignTest, AReconnectWithATooShortTimeoutTakesTheCandidateOut) {
  auto a = started("a");
  auto b = started("b");
  b->client->negotiatedTimeout = 3s;
  b->client->dropConnection();
  settle();
  EXPECT_FALSE(b->campaign->node()) << "its waiting node deleted";
  EXPECT_EQ(contenders().size(), 1u);
  EXPECT_NE(b->campaign->leadership().problem.find("session timeout of 3s"), std::string::npos);
  a->client->negotiatedTimeout = 3s;
  a->client->dropConnection();
  settle();
  EXPECT_FALSE(a->leads());
  EXPECT_EQ(a->count(Kind::kSteppedDown), 1);
  EXPECT_TRUE(contenders().empty());
  clock.advance(5s);
  EXPECT_FALSE(a->leads() || b->leads());
  b->client->negotiatedTimeout = 6s;
  b->client->dropConnection();
  settle();
  EXPECT_TRUE(b->leads());
  EXPECT_EQ(b->campaign->leadership().problem, "");
}

TEST_F(ZkCampaignTest, ALeaderWhoseNodeIsDeletedStopsAtOnceAndQueuesAgain) {
  auto a = started("a");
  auto b = started("b");
  const auto token = a->token();
  zk.remove(a->node());
  settle();
  EXPECT_EQ(a->count(Kind::kSteppedDown), 1);
  EXPECT_TRUE(b->leads());
  EXPECT_FALSE(a->leads());
  ASSERT_TRUE(a->campaign->node());
  EXPECT_GT(b->token(), token);
  EXPECT_EQ(contenders().size(), 2u);
}

TEST_F(ZkCampaignTest, ASessionTimeoutShorterThanRPlusLPlusPIsRefusedWithTheNumbers) {
  auto a = candidate("a");
  a->client->negotiatedTimeout = 4500ms;  // R + L + P = 5 s
  a->campaign->start();
  settle();
  clock.advance(5s);
  EXPECT_FALSE(a->leads());
  EXPECT_FALSE(a->campaign->node());
  EXPECT_EQ(a->client->count("create"), 0);
  const std::string problem = a->campaign->leadership().problem;
  EXPECT_EQ(problem.rfind("the servers gave a session timeout of 4.5s, less than --renew-deadline "
                          "+ --zk-server-lag + the request interval = 5s",
                          0),
            0u)
      << problem;
  EXPECT_EQ(a->count(Kind::kStoreFailed), 1);
  // A session with enough (the servers' maxSessionTimeout raised): it joins.
  a->client->negotiatedTimeout = 5s;
  zk.expireSession(*a->client->sessionId());
  settle();
  EXPECT_TRUE(a->leads());
  EXPECT_EQ(a->campaign->leadership().problem, "");
}

TEST_F(ZkCampaignTest, RefusedCredentialsAreAProblemAndEndTheClaim) {
  auto a = started("a");
  ASSERT_TRUE(a->leads());
  a->client->failAuthentication("memory:2181 said AuthFailed");
  settle();
  EXPECT_FALSE(a->leads());
  EXPECT_EQ(a->campaign->leadership().problem,
            "authenticating the session: memory:2181 said AuthFailed");
  EXPECT_EQ(a->count(Kind::kStoreFailed), 1);
}

TEST_F(ZkCampaignTest, ADeniedRequestIsAProblemUntilZooKeeperAnswersAgain) {
  ZkResult noAuth;
  noAuth.kind = ZkResult::Kind::kDenied;
  noAuth.code = ZkCode::kNoAuth;
  noAuth.message = "memory:2181 answered NoAuth (code -102)";
  auto a = candidate("a");
  a->client->failNext("create", noAuth);
  a->campaign->start();
  settle();
  EXPECT_FALSE(a->leads());
  EXPECT_EQ(a->campaign->leadership().problem,
            "creating the election's path /election: memory:2181 answered NoAuth (code -102)");
  clock.advance(1s);
  settle();
  EXPECT_TRUE(a->leads());
  EXPECT_EQ(a->campaign->leadership().problem, "");
  EXPECT_NE(a->details(Kind::kObserved).find("answers this candidate's requests again"),
            std::string::npos);
}

TEST_F(ZkCampaignTest, StopReleaseForAndHandOverEndTheClaimAtOnceAndLetTheNextLead) {
  struct Case {
    const char* name;
    std::function<void(ZkCampaign&, std::function<void()>)> release;
    std::optional<time::Duration> rejoinsAfter;  // nullopt: never
  };
  const std::vector<Case> cases = {
      {"stop", [](ZkCampaign& c, std::function<void()> d) { c.stop(std::move(d)); }, std::nullopt},
      {"releaseFor 2s",
       [](ZkCampaign& c, std::function<void()> d) { c.releaseFor(2s, std::move(d)); }, 2s},
      {"handOver", [](ZkCampaign& c, std::function<void()> d) { c.handOver(std::move(d)); }, 0s},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    time::FakeClock localClock;
    MemoryZooKeeper localZk(localClock);
    const auto settleLocal = [&] {
      for (int i = 0; i < 20; ++i)
        localClock.runDue();
    };
    Candidate a(localClock, localZk, "a");
    a.campaign->start();
    settleLocal();
    Candidate b(localClock, localZk, "b");
    b.campaign->start();
    settleLocal();
    ASSERT_TRUE(a.leads());
    const auto aToken = a.token();
    bool done = false;
    c.release(*a.campaign, [&] { done = true; });
    EXPECT_FALSE(a.leads()) << "stops claiming at once";
    ASSERT_EQ(a.events.back().kind, Kind::kSteppedDown);
    EXPECT_TRUE(a.events.back().voluntary);
    settleLocal();
    EXPECT_TRUE(done);
    EXPECT_EQ(a.count(Kind::kReleased), 1);
    ASSERT_TRUE(b.leads()) << "at once: no waiting for an expiry";
    EXPECT_GT(b.token(), aToken);
    localClock.advance(c.rejoinsAfter.value_or(0s));
    settleLocal();
    EXPECT_EQ(a.campaign->node().has_value(), c.rejoinsAfter.has_value());
    localClock.advance(15s);
    EXPECT_TRUE(b.leads()) << "and a does not take it back";
    EXPECT_FALSE(a.leads());
    EXPECT_EQ(localZk.children(kPath).size(), c.rejoinsAfter ? 2u : 1u);
  }
}

TEST_F(ZkCampaignTest, AnIneligibleCandidateSendsNothingUntilReconsidered) {
  auto a = candidate("a");
  bool eligible = false;
  a->campaign->setEligibility([&] { return eligible; });
  a->campaign->start();
  settle();
  clock.advance(10s);
  EXPECT_TRUE(a->client->ops.empty()) << "no node, no read for a shard not ours";
  EXPECT_FALSE(a->leads());
  eligible = true;
  a->campaign->reconsider();
  settle();
  EXPECT_TRUE(a->leads());
}

TEST_F(ZkCampaignTest, AWaitingNodeNoLongerEligibleLeavesTheQueueButALeaderStays) {
  auto a = started("a");
  auto b = started("b");
  bool eligible = false;
  a->campaign->setEligibility([&] { return eligible; });
  b->campaign->setEligibility([&] { return eligible; });
  a->campaign->reconsider();  // leads: left alone
  b->campaign->reconsider();  // waits behind a: leaves the queue
  settle();
  EXPECT_TRUE(a->leads());
  EXPECT_FALSE(b->campaign->node());
  ASSERT_EQ(contenders().size(), 1u);
  a->campaign->stop(nullptr);
  settle();
  clock.advance(5s);
  EXPECT_FALSE(b->leads());
  EXPECT_TRUE(contenders().empty());
  eligible = true;
  b->campaign->reconsider();
  settle();
  EXPECT_TRUE(b->leads());
}

TEST_F(ZkCampaignTest, ImpossibleSettingsAreRefusedWithTheirReason) {
  MemoryZooKeeper::Client client(zk);
  const auto make = [&](std::string identity, std::string path,
                        election::ElectionTimings timings = test::testTimings()) {
    ZkCampaign c(
        clock, client,
        ZkCampaignConfig{std::move(identity), std::move(path), timings, test::testServerLag()});
  };
  auto bad = test::testTimings();
  bad.renewDeadline = 6s;  // R >= D
  EXPECT_THROW(make("a", kPath, bad), std::invalid_argument);
  EXPECT_THROW(make("", kPath), std::invalid_argument);
  EXPECT_THROW(make("a", "election"), std::invalid_argument);
  EXPECT_THROW(make("a", "/election/"), std::invalid_argument);
  EXPECT_THROW(make("a", "/"), std::invalid_argument);
  EXPECT_THROW(make("a", ""), std::invalid_argument);
  EXPECT_NO_THROW(make("a", "/e"));
}

// Three candidates, each with its own client, under random faults (one cut off, its connection
// dropped, latency, lost answers, crashes and restarts, stops, releases): at every step at most
// one claims, and each new term's token is above every earlier one. Sessions expire the way the
// servers expire them (T after they last heard of one); an expiry forced on a session that is
// still heard from is, like a node deleted by somebody else, outside what the claim rule can
// cover (the holder learns of it one round trip after the next candidate), and not drawn here.
TEST_F(ZkCampaignTest, UnderRandomFaultsTwoClaimsNeverOverlapAndTokensOnlyGoUp) {
  int stepsWithALeader = 0;
  int allTerms = 0;
  for (unsigned seed = 1; seed <= 30; ++seed) {
    std::mt19937 random(seed);
    time::FakeClock localClock;
    MemoryZooKeeper localZk(localClock);
    std::vector<std::unique_ptr<Candidate>> rs(3);
    // What happened, for the message when a check fails.
    std::string trace;
    const auto t0 = localClock.now();
    const auto at = [&] { return "[" + time::formatDuration(localClock.now() - t0) + "] "; };
    const auto tail = [&] { return trace.substr(trace.size() > 8000 ? trace.size() - 8000 : 0); };
    const auto restart = [&](std::size_t i) {
      rs[i].reset();
      rs[i] = std::make_unique<Candidate>(localClock, localZk,
                                          std::string(1, static_cast<char>('a' + i)));
      const std::string name = rs[i]->campaign->leadership().identity;
      trace += at() + name + " starts\n";
      rs[i]->campaign->setEventHandler([&, name](const ElectorEvent& e) {
        trace += at() + name + ": " + election::toString(e.kind) + " " + e.detail +
                 (e.token ? " token " + std::to_string(*e.token) : "") + "\n";
      });
      rs[i]->campaign->start();
    };
    for (std::size_t i = 0; i < rs.size(); ++i)
      restart(i);
    std::int64_t highestToken = 0;
    std::string lastHolder;
    int terms = 0;
    for (int step = 0; step < 1000; ++step) {
      const int dice = static_cast<int>(random() % 100);
      auto& who = *rs[random() % rs.size()];
      const std::string name = who.campaign->leadership().identity;
      const auto act = [&](const std::string& what) { trace += at() + name + " " + what + "\n"; };
      if (dice < 4) {
        act(who.client->reachable() ? "cut off" : "reachable again");
        who.client->setReachable(!who.client->reachable());
      }
      if (dice == 4) {
        act("connection dropped");
        who.client->dropConnection();
      }
      if (dice == 5) {
        who.client->latency = std::chrono::milliseconds(random() % 1500);
        act("latency " + time::formatDuration(who.client->latency));
      }
      if (dice == 6) {
        const std::string op = random() % 2 ? "create" : "ping";
        act("loses its next " + op + "'s answer");
        who.client->loseNextAnswer(op);
      }
      if (dice == 7) {
        act("stop()");
        who.campaign->stop(nullptr);
      }
      if (dice == 8) {
        const auto i = random() % rs.size();
        trace += at() + std::string(1, static_cast<char>('a' + i)) + " killed\n";
        restart(i);
      }
      if (dice == 10) {
        const auto cooldown = std::chrono::milliseconds(random() % 3000);
        act("releaseFor(" + time::formatDuration(cooldown) + ")");
        who.campaign->releaseFor(cooldown, nullptr);
      }
      localClock.advance(100ms);
      int leaders = 0;
      for (const auto& r : rs) {
        const auto l = r->campaign->leadership();
        if (!l.leader) continue;
        ++leaders;
        if (*l.fencingToken != highestToken || l.identity != lastHolder) {
          ASSERT_GT(*l.fencingToken, highestToken) << "seed " << seed << " step " << step << "\n"
                                                   << tail();
          highestToken = *l.fencingToken;
          lastHolder = l.identity;
          ++terms;
        }
      }
      stepsWithALeader += leaders > 0;
      ASSERT_LE(leaders, 1) << "seed " << seed << " step " << step << "\n" << tail();
    }
    EXPECT_GT(terms, 0) << "seed " << seed;
    allTerms += terms;
  }
  EXPECT_GT(stepsWithALeader, 1000);
  EXPECT_GT(allTerms, 50);
}

}  // namespace
}  // namespace leasehold::zookeeper

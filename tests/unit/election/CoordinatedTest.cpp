// Coordinated mode (--coordinated, issue 14): the API server's coordinated-leader-election
// controller names the holder by writing holderIdentity (acquireTime unset, leaseTransitions
// untouched) or asks the holder to yield through spec.preferredHolder. The replicas follow it
// instead of competing; the token still goes up every term because the named replica's first
// write increments leaseTransitions, and it claims only once that write is confirmed.
#include <gtest/gtest.h>

#include <functional>

#include "ElectorFixture.h"

namespace leasehold::election::testing {
namespace {

using Kind = ElectorEvent::Kind;

class CoordinatedTest : public ElectorFixture {
 public:  // the table's lambdas set the scene
  using ElectorFixture::backend;
  using ElectorFixture::clock;
  using ElectorFixture::seed;
  using ElectorFixture::stored;

  std::unique_ptr<Replica> coordinated(const std::string& id,
                                       FollowerMode mode = FollowerMode::kWatch) {
    auto r = std::make_unique<Replica>();
    r->store = std::make_unique<MemoryLeaseStore>(backend, clock);
    ElectorConfig config{Identity{id}, timings, mode};
    config.coordinated = true;
    r->elector = std::make_unique<Elector>(clock, *r->store, config, [] { return 0.5; });
    auto* raw = r.get();
    r->elector->setEventHandler([raw](const ElectorEvent& e) { raw->events.push_back(e); });
    r->elector->start();
    clock.runDue();
    return r;
  }
  // What the controller writes when it names a holder: holder, renewTime now, 5 s, no
  // acquireTime, no preferredHolder, leaseTransitions as it was.
  void controllerNames(const std::string& holder) {
    LeaseRecord r = backend.current().value_or(LeaseRecord{});
    r.holderIdentity = holder;
    r.renewTime = clock.wallNow();
    r.leaseDurationSeconds = 5;
    r.acquireTime.reset();
    r.preferredHolder.clear();
    backend.put(r);
  }
  void released(const std::string& preferred) {
    seed("", 7, 1);
    LeaseRecord r = stored();
    r.preferredHolder = preferred;
    backend.put(r);
  }
};

// Lease states nobody may take on their own in coordinated mode, and those the named replica
// takes with the next token.
struct TakeCase {
  const char* name;
  std::function<void(CoordinatedTest&)> before;  // the Lease before the replicas start
  std::function<void(CoordinatedTest&)> then;    // what happens after they started
  Duration wait;
  std::optional<std::string> holder;  // nullopt: no Lease at all
  std::int32_t transitions;
  bool leaderB;
};

void PrintTo(const TakeCase& c, std::ostream* os) {
  *os << c.name;
}

const TakeCase kTakeCases[] = {
    {"NoLeaseIsNotCreated", [](auto&) {}, [](auto&) {}, 60s, std::nullopt, 0, false},
    {"AReleasedLeaseIsNotTaken", [](auto& t) { t.seed("", 4, 1); }, [](auto&) {}, 60s, "", 4,
     false},
    {"AnExpiredLeaseIsNotTakenOver", [](auto& t) { t.seed("gone", 4); }, [](auto&) {}, 60s, "gone",
     4, false},
    {"ARequestForSomebodyElseIsLeftToTheController", [](auto& t) { t.released("c"); }, [](auto&) {},
     60s, "", 7, false},
    {"NamedByTheControllerTheFirstWriteIncrementsTheToken", [](auto& t) { t.seed("", 4, 1); },
     [](auto& t) { t.controllerNames("b"); }, 0s, "b", 5, true},
    {"TheControllersNewLeaseStartsAtTokenOne", [](auto&) {},
     [](auto& t) { t.controllerNames("b"); }, 0s, "b", 1, true},
    {"AReleasedLeaseHandedToUsIsTakenAtOnce", [](auto& t) { t.released("b"); }, [](auto&) {}, 0s,
     "b", 8, true},
    {"AnEarlierProcessOfOursIsTakenOnceExpired", [](auto& t) { t.seed("b", 4); }, [](auto&) {}, 16s,
     "b", 5, true},
    {"AnEarlierProcessOfOursIsNotTakenBeforeItExpires", [](auto& t) { t.seed("b", 4); },
     [](auto&) {}, 14s, "b", 4, false},
};

class CoordinatedTakeSuite : public CoordinatedTest,
                             public ::testing::WithParamInterface<TakeCase> {};

TEST_P(CoordinatedTakeSuite, Case) {
  const TakeCase& c = GetParam();
  CoordinatedTest& t = *this;
  c.before(t);
  auto a = t.coordinated("a");
  auto b = t.coordinated("b");
  c.then(t);
  t.clock.runDue();
  t.clock.advance(c.wait);
  if (!c.holder) {
    EXPECT_FALSE(t.backend.current());
  } else {
    ASSERT_TRUE(t.backend.current());
    EXPECT_EQ(t.stored().holderIdentity, *c.holder);
    EXPECT_EQ(t.stored().leaseTransitions, c.transitions);
  }
  EXPECT_EQ(b->now().leader, c.leaderB);
  EXPECT_FALSE(a->now().leader);
  if (c.leaderB) {
    EXPECT_EQ(b->now().fencingToken, c.transitions);
    EXPECT_TRUE(t.stored().acquireTime);        // our term, no longer the controller's record
    EXPECT_EQ(t.stored().preferredHolder, "");  // the new holder removed any request
  }
}

INSTANTIATE_TEST_SUITE_P(Coordinated, CoordinatedTakeSuite, ::testing::ValuesIn(kTakeCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(CoordinatedTest, TheNamedReplicaClaimsOnlyOnceItsFirstWriteIsConfirmed) {
  seed("", 4, 1);
  auto b = coordinated("b");
  b->store->setLatency(50ms);
  controllerNames("b");
  for (int i = 0; i < 1000 && stored().leaseTransitions != 5; ++i)
    clock.advance(1ms);
  // The acquisition write reached the server, its answer is still on its way: the controller's
  // record alone does not make b the leader.
  ASSERT_EQ(stored().holderIdentity, "b");
  ASSERT_EQ(stored().leaseTransitions, 5);
  const MonoTime sentAt = clock.now() - 50ms;
  EXPECT_FALSE(b->now().leader);
  EXPECT_FALSE(b->saw(Kind::kAcquired));
  clock.advance(50ms);
  EXPECT_TRUE(b->now().leader);
  EXPECT_EQ(b->now().fencingToken, 5);
  EXPECT_EQ(b->now().validUntilMono, sentAt + 10s);  // counted from when the write was sent
}

TEST_F(CoordinatedTest, TheNamedReplicaWaitsOutATermItSawLiveOnItsOwnClock) {
  seed("a", 4);  // a's live term, seen by b now
  auto b = coordinated("b");
  clock.advance(3s);
  controllerNames("b");  // the controller judged a expired on the server's clock: skew
  clock.runDue();
  EXPECT_FALSE(b->now().leader);
  EXPECT_EQ(stored().leaseTransitions, 4);
  clock.advance(11s);  // 14 s after a's record was seen: a might still claim
  EXPECT_FALSE(b->now().leader);
  clock.advance(2s);
  EXPECT_TRUE(b->now().leader);
  EXPECT_EQ(stored().leaseTransitions, 5);
}

TEST_F(CoordinatedTest, AReleaseBeforeTheControllersDecisionNeedsNoWait) {
  auto a = coordinated("a");
  auto b = coordinated("b");
  controllerNames("a");
  clock.runDue();
  ASSERT_TRUE(a->now().leader);
  const auto token = *a->now().fencingToken;
  a->elector->stop(nullptr);  // SIGTERM: released
  clock.runDue();
  EXPECT_EQ(stored().holderIdentity, "");
  clock.advance(30s);  // nobody takes a released Lease on their own
  EXPECT_EQ(stored().holderIdentity, "");
  controllerNames("b");
  clock.runDue();
  EXPECT_TRUE(b->now().leader);
  EXPECT_EQ(b->now().fencingToken, token + 1);
}

TEST_F(CoordinatedTest, TheHolderYieldsToTheControllersPreferredHolder) {
  auto a = coordinated("a");
  auto b = coordinated("b");
  auto c = coordinated("c");
  controllerNames("a");
  clock.runDue();
  ASSERT_TRUE(a->now().leader);
  const auto token = *a->now().fencingToken;
  LeaseRecord r = stored();
  r.preferredHolder = "c";  // the controller found a better candidate
  backend.put(r);
  clock.runDue();
  ASSERT_TRUE(a->saw(Kind::kHandoverRequested));
  a->elector->handOver(nullptr);
  clock.runDue();
  EXPECT_EQ(stored().holderIdentity, "c");
  EXPECT_EQ(stored().leaseTransitions, token + 1);
  EXPECT_EQ(stored().preferredHolder, "");
  EXPECT_TRUE(c->now().leader);
  EXPECT_FALSE(a->now().leader);
  EXPECT_FALSE(b->now().leader);
}

TEST_F(CoordinatedTest, TheHolderRenewsItsTermAndNeverAnotherOne) {
  auto a = coordinated("a");
  controllerNames("a");
  clock.runDue();
  const auto token = stored().leaseTransitions;
  clock.advance(30s);
  EXPECT_TRUE(a->now().leader);
  EXPECT_EQ(stored().leaseTransitions, token);
  EXPECT_EQ(stored().renewTime, clock.wallNow());
  controllerNames("b");  // the controller moved it (b is gone): a's term is over
  clock.advance(30s);
  EXPECT_FALSE(a->now().leader);
  EXPECT_EQ(stored().holderIdentity, "b");
}

TEST_F(CoordinatedTest, APollingFollowerNoticesTheDecisionWithinARetryPeriod) {
  seed("", 4, 1);
  auto b = coordinated("b", FollowerMode::kPoll);
  controllerNames("b");
  clock.advance(2s);
  EXPECT_FALSE(b->now().leader);  // not read yet (the poll interval is P plus jitter)
  clock.advance(2s);
  EXPECT_TRUE(b->now().leader);
  EXPECT_EQ(stored().leaseTransitions, 5);
}

}  // namespace
}  // namespace leasehold::election::testing

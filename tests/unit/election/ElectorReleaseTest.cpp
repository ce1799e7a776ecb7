// Elector::stop and releaseFor on a fake clock and the in-memory Lease: exactly the release
// record, the handover it makes at once through the watch, no write without leadership, and the
// cooldown during which it does not compete.
#include "ElectorFixture.h"

namespace leasehold::election::testing {
namespace {

using Kind = ElectorEvent::Kind;

class ElectorReleaseTest : public ElectorFixture {};

TEST_F(ElectorReleaseTest, ReleaseWritesExactlyTheReleaseRecord) {
  seed("other", 4, 15);
  auto a = replica("a");
  a->elector->start();
  clock.advance(15s);
  ASSERT_TRUE(a->now().leader);
  clock.advance(3s);
  const auto before = stored();
  a->store->setLatency(50ms);
  bool done = false;
  a->elector->stop([&] { done = true; });
  EXPECT_FALSE(a->now().leader) << "stop claiming before the release is even sent";
  EXPECT_FALSE(done);
  clock.advance(100ms);
  EXPECT_TRUE(done);
  const auto r = stored();
  EXPECT_EQ(r.holderIdentity, "");
  EXPECT_EQ(r.leaseDurationSeconds, 1);
  EXPECT_EQ(r.leaseTransitions, before.leaseTransitions);
  EXPECT_EQ(r.renewTime, clock.wallNow() - 100ms);
  EXPECT_EQ(r.acquireTime, r.renewTime);
  EXPECT_TRUE(a->saw(Kind::kReleased));
  const int writes = a->store->counters().total();
  clock.advance(60s);
  EXPECT_EQ(a->store->counters().total(), writes) << "a stopped elector stays quiet";
}

TEST_F(ElectorReleaseTest, ReleaseHandsOverAtOnceThroughTheWatch) {
  auto a = started("a");
  auto b = replica("b");
  b->elector->start();
  clock.advance(5s);
  a->elector->stop(nullptr);
  clock.runDue();
  EXPECT_TRUE(b->now().leader);
  EXPECT_EQ(b->now().fencingToken, 1);
}

TEST_F(ElectorReleaseTest, StopWithoutLeadershipWritesNothing) {
  seed("other", 2);
  auto a = started("a");
  const auto rv = stored().resourceVersion;
  bool done = false;
  a->elector->stop([&] { done = true; });
  clock.runDue();
  EXPECT_TRUE(done);
  EXPECT_EQ(stored().resourceVersion, rv);
}

TEST_F(ElectorReleaseTest, ReleaseForCooldownDoesNotCompeteUntilItEnds) {
  auto a = started("a");
  a->elector->releaseFor(30s, nullptr);
  clock.runDue();
  EXPECT_EQ(stored().holderIdentity, "");
  clock.advance(29s);
  EXPECT_EQ(stored().holderIdentity, "");
  EXPECT_FALSE(a->now().leader);
  clock.advance(2s);
  EXPECT_TRUE(a->now().leader);
  EXPECT_EQ(a->now().fencingToken, 1);
}

}  // namespace
}  // namespace leasehold::election::testing

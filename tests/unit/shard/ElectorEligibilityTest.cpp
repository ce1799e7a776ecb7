// Elector::setEligibility, shard mode's hook: a shard's Elector acquires only while the shard is
// assigned to this member, renews and releases regardless, and takes an expired Lease at once
// when it becomes eligible (its observation time counts from when it first saw the record, not
// from when it became eligible).
#include "ElectorFixture.h"

namespace leasehold::election::testing {
namespace {

using Kind = ElectorEvent::Kind;

class ElectorEligibilityTest : public ElectorFixture {
 protected:
  std::unique_ptr<Replica> gated(const std::string& id, bool& eligible) {
    auto r = replica(id);
    r->elector->setEligibility([&eligible] { return eligible; });
    r->elector->start();
    clock.runDue();
    return r;
  }
};

TEST_F(ElectorEligibilityTest, AnIneligibleMemberDoesNotCreateTheLease) {
  bool eligible = false;
  auto a = gated("a", eligible);
  clock.advance(60s);
  EXPECT_FALSE(backend.current());
  EXPECT_FALSE(a->now().leader);
  eligible = true;
  a->elector->reconsider();
  clock.runDue();
  ASSERT_TRUE(backend.current());
  EXPECT_EQ(stored().holderIdentity, "a");
  EXPECT_TRUE(a->now().leader);
}

TEST_F(ElectorEligibilityTest, AnExpiredLeaseIsTakenOnlyOnceEligibleAndThenAtOnce) {
  seed("gone", 4);
  bool eligible = false;
  auto a = gated("a", eligible);
  clock.advance(40s);  // well past D after a saw the record
  EXPECT_EQ(stored().holderIdentity, "gone");
  eligible = true;
  a->elector->reconsider();
  clock.runDue();
  EXPECT_EQ(stored().holderIdentity, "a");
  EXPECT_EQ(stored().leaseTransitions, 5);
  EXPECT_TRUE(a->now().leader);
}

TEST_F(ElectorEligibilityTest, EligibleBeforeExpiryWaitsForTheExpiryAsUsual) {
  seed("other", 1);
  bool eligible = true;
  auto a = gated("a", eligible);
  clock.advance(14s);
  EXPECT_EQ(stored().holderIdentity, "other");
  clock.advance(1s);
  EXPECT_EQ(stored().holderIdentity, "a");
}

TEST_F(ElectorEligibilityTest, AHolderKeepsRenewingAndIsNotRetakenAfterItsRelease) {
  bool eligible = true;
  auto a = gated("a", eligible);
  ASSERT_TRUE(a->now().leader);
  eligible = false;
  clock.advance(30s);  // renewals are not acquisitions
  EXPECT_TRUE(a->now().leader);
  EXPECT_EQ(stored().renewTime, clock.wallNow());
  a->elector->releaseFor(0s, nullptr);
  clock.advance(30s);
  EXPECT_EQ(stored().holderIdentity, "");
  EXPECT_FALSE(a->now().leader);
  EXPECT_TRUE(a->saw(Kind::kReleased));
  // Another member it was assigned to takes the released Lease at once.
  bool otherEligible = true;
  auto b = gated("b", otherEligible);
  EXPECT_EQ(stored().holderIdentity, "b");
  EXPECT_EQ(stored().leaseTransitions, 1);
}

TEST_F(ElectorEligibilityTest, ALapsedTermOfItsOwnIsNotRestartedWhenIneligible) {
  bool eligible = true;
  auto a = gated("a", eligible);
  ASSERT_TRUE(a->now().leader);
  a->store->setPartitioned(true);
  clock.advance(11s);  // past R: stepped down
  EXPECT_FALSE(a->now().leader);
  eligible = false;
  a->store->setPartitioned(false);
  clock.advance(30s);
  EXPECT_FALSE(a->now().leader);
}

}  // namespace
}  // namespace leasehold::election::testing

// Handover on request (issue 14): an operator names the next holder in the Lease
// (spec.preferredHolder or the leasehold.io/preferred-holder annotation, decoded into
// LeaseRecord::preferredHolder). The leader is told (kHandoverRequested), hands over once its
// work has stopped (handOver), the named replica takes the released Lease at once, the others
// leave it to that replica for D, and the new holder removes the request.
#include <gtest/gtest.h>

#include "ElectorFixture.h"

namespace leasehold::election::testing {
namespace {

using Kind = ElectorEvent::Kind;

class HandoverTest : public ElectorFixture {
 protected:
  void request(const std::string& who) {
    LeaseRecord r = stored();
    r.preferredHolder = who;
    backend.put(r);
    clock.runDue();
  }
  int count(const Replica& r, Kind kind) const {
    int n = 0;
    for (const auto& e : r.events)
      n += e.kind == kind;
    return n;
  }
};

TEST_F(HandoverTest, TheNamedReplicaTakesTheLeaseAtOnceWithTheNextToken) {
  auto a = started("a");
  auto b = started("b");
  auto c = started("c");
  const auto token = a->now().fencingToken;
  request("b");
  // Only the leader is told, once; the request alone changes nobody's leadership.
  EXPECT_EQ(count(*a, Kind::kHandoverRequested), 1);
  EXPECT_FALSE(b->saw(Kind::kHandoverRequested));
  EXPECT_TRUE(a->now().leader);
  clock.advance(2s);  // a renewal in between does not clear a request for somebody else
  EXPECT_EQ(stored().preferredHolder, "b");
  EXPECT_EQ(count(*a, Kind::kHandoverRequested), 1);

  a->elector->handOver(nullptr);
  EXPECT_FALSE(a->now().leader);  // stops claiming before the release is even sent
  clock.runDue();                 // release, then b's acquisition: no time passes
  EXPECT_EQ(stored().holderIdentity, "b");
  EXPECT_EQ(stored().leaseTransitions, *token + 1);
  EXPECT_EQ(stored().preferredHolder, "");  // the new holder removed the request
  EXPECT_TRUE(b->now().leader);
  EXPECT_FALSE(a->now().leader);
  EXPECT_FALSE(c->now().leader);
  // Nobody else tries for it while b renews.
  clock.advance(60s);
  EXPECT_EQ(stored().holderIdentity, "b");
  EXPECT_EQ(stored().leaseTransitions, *token + 1);
}

// The request lands while a renewal is on its way: the renewal's CAS fails (409) and the claim
// drops; the release must still go out (after a re-read), not leave the Lease to expire.
TEST_F(HandoverTest, ARequestRacingARenewalStillReleasesAtOnce) {
  auto a = started("a");
  auto b = started("b");
  const auto token = a->now().fencingToken;
  a->store->setLatency(50ms);
  clock.advance(2s);  // a's renewal is on its way
  request("b");       // lands before it
  a->elector->handOver(nullptr);
  clock.advance(1s);  // far less than D
  EXPECT_EQ(stored().holderIdentity, "b");
  EXPECT_EQ(stored().leaseTransitions, *token + 1);
  EXPECT_TRUE(b->now().leader);
}

TEST_F(HandoverTest, AnAliasNamesTheReplicaToo) {
  auto a = started("a");
  auto b = replica("b");
  b->elector->setAlias("web-1");
  b->elector->start();
  clock.runDue();
  request("web-1");
  ASSERT_TRUE(a->saw(Kind::kHandoverRequested));
  a->elector->handOver(nullptr);
  clock.runDue();
  EXPECT_TRUE(b->now().leader);
  EXPECT_EQ(stored().preferredHolder, "");
}

TEST_F(HandoverTest, OthersLeaveAReleasedLeaseToTheNamedReplicaForD) {
  auto a = started("a");
  auto c = started("c");
  const auto token = a->now().fencingToken;
  request("gone");  // names nobody who exists
  ASSERT_TRUE(a->saw(Kind::kHandoverRequested));
  a->elector->handOver(nullptr);
  clock.runDue();
  EXPECT_EQ(stored().holderIdentity, "");
  EXPECT_EQ(stored().preferredHolder, "gone");
  clock.advance(14s);  // short of D after the release was seen
  EXPECT_EQ(stored().holderIdentity, "");
  EXPECT_FALSE(a->now().leader);
  EXPECT_FALSE(c->now().leader);
  clock.advance(2s);  // D has passed: compete as usual; the winner removes the request
  const auto holder = stored().holderIdentity;
  EXPECT_TRUE(holder == "a" || holder == "c") << holder;
  EXPECT_EQ(stored().leaseTransitions, *token + 1);
  EXPECT_EQ(stored().preferredHolder, "");
}

TEST_F(HandoverTest, ARequestNamingTheLeaderIsRemovedByItsNextRenewal) {
  auto a = started("a");
  auto b = started("b");
  const auto token = a->now().fencingToken;
  request("a");
  EXPECT_FALSE(a->saw(Kind::kHandoverRequested));
  clock.advance(2s);
  EXPECT_EQ(stored().preferredHolder, "");
  EXPECT_EQ(stored().holderIdentity, "a");
  EXPECT_EQ(stored().leaseTransitions, token);
  EXPECT_TRUE(a->now().leader);
}

TEST_F(HandoverTest, HandOverFromAFollowerDoesNothing) {
  auto a = started("a");
  auto b = started("b");
  bool done = false;
  b->elector->handOver([&] { done = true; });
  EXPECT_TRUE(done);
  clock.runDue();
  EXPECT_EQ(stored().holderIdentity, "a");
  EXPECT_TRUE(a->now().leader);
}

TEST_F(HandoverTest, ANewRequestAfterTheFirstIsAnnouncedAgain) {
  auto a = started("a");
  auto b = started("b");
  request("x");
  request("y");
  EXPECT_EQ(count(*a, Kind::kHandoverRequested), 2);
  request("");
  request("x");
  EXPECT_EQ(count(*a, Kind::kHandoverRequested), 3);
}

}  // namespace
}  // namespace leasehold::election::testing

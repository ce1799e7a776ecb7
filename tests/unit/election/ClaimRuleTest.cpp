// The claim rule every store's candidacy shares: a confirmed write sent at S supports a claim
// until S + R (not D, not the answer's arrival), and the leader's part of a Leadership answer
// says so on both clocks, the wall one only for people (a wrong wall clock moves the readable
// instant, never the claim).
#include "election/ClaimRule.h"

#include <gtest/gtest.h>

#include "FakeClock.h"

namespace leasehold::election {
namespace {

using namespace std::chrono_literals;
using time::Duration;

TEST(ClaimRuleTest, AClaimEndsRAfterTheConfirmedWriteWasSent) {
  const ElectionTimings timings{15s, 10s, 2s, 1.2};
  struct Case {
    Duration sentAfterStart;
    Duration wantEndAfterStart;
  };
  for (const Case& c : {Case{0s, 10s}, Case{3s, 13s}, Case{1500ms, 11500ms}}) {
    const time::MonoTime start{};
    EXPECT_EQ(claimEndsAt(start + c.sentAfterStart, timings), start + c.wantEndAfterStart)
        << "sent " << time::formatDuration(c.sentAfterStart);
  }
}

TEST(ClaimRuleTest, DescribesTheLeadersClaimOnBothClocks) {
  time::FakeClock clock;
  for (const Duration wallOffset : {Duration::zero(), Duration(-3600s), Duration(86400s)}) {
    clock.setWallOffset(wallOffset);
    const auto now = clock.now();
    const auto endsAt = now + 7s;
    Leadership l;
    describeClaim(l, 42, endsAt, now, clock);
    EXPECT_TRUE(l.leader);
    EXPECT_EQ(l.fencingToken, 42);
    EXPECT_EQ(l.validUntilMono, endsAt) << "the claim itself: monotonic";
    ASSERT_TRUE(l.validUntil.has_value());
    EXPECT_EQ(*l.validUntil - clock.wallNow(), Duration(7s))
        << "for people: the same distance from the wall clock's now, offset "
        << time::formatDuration(wallOffset);
  }
}

}  // namespace
}  // namespace leasehold::election

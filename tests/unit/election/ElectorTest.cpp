// Elector behaviour on a fake clock and the in-memory Lease: every case is replayed exactly.
// (Stopping and releasing are in ElectorReleaseTest.)
#include "ElectorFixture.h"

namespace leasehold::election::testing {
namespace {

using Kind = ElectorEvent::Kind;

class ElectorTest : public ElectorFixture {};

TEST_F(ElectorTest, FirstAcquisitionCreatesTheLeaseWithTokenZero) {
  auto a = started("a");

  ASSERT_TRUE(backend.current());
  EXPECT_EQ(stored().holderIdentity, "a");
  EXPECT_EQ(stored().leaseTransitions, 0);
  EXPECT_EQ(stored().leaseDurationSeconds, 15);
  EXPECT_EQ(stored().acquireTime, clock.wallNow());
  const auto l = a->now();
  EXPECT_TRUE(l.leader);
  EXPECT_EQ(l.fencingToken, 0);
  EXPECT_EQ(l.holder, "a");
  EXPECT_EQ(l.validUntilMono, clock.now() + 10s);
  EXPECT_EQ(l.validUntil, clock.wallNow() + 10s);
  EXPECT_TRUE(a->saw(Kind::kAcquired));
}

// kubectl annotate/label on the Lease (or any writer of metadata only) bumps resourceVersion but
// leaves the spec as the leader wrote it: still the same term, so the leader keeps claiming it
// and its deadline still counts from its own last write.
TEST_F(ElectorTest, AMetadataOnlyChangeKeepsTheLeadersTerm) {
  auto a = started("a");
  clock.advance(1s);
  LeaseRecord edited = stored();
  edited.opaque = R"({"metadata":{"annotations":{"team":"payments"}}})";
  const auto before = a->now();
  backend.put(edited);
  ASSERT_NE(stored().resourceVersion, edited.resourceVersion);
  clock.runDue();
  const auto l = a->now();
  EXPECT_TRUE(l.leader);
  EXPECT_EQ(l.fencingToken, before.fencingToken);
  EXPECT_EQ(l.validUntilMono, before.validUntilMono);
  EXPECT_FALSE(a->saw(Kind::kSteppedDown));
  // The next renewal is a CAS on the edited object's resourceVersion and keeps the term.
  clock.advance(1s);
  EXPECT_EQ(stored().holderIdentity, "a");
  EXPECT_EQ(stored().leaseTransitions, before.fencingToken);
  EXPECT_EQ(stored().renewTime, clock.wallNow());
  EXPECT_TRUE(a->now().leader);
}

// The same edit racing a renewal: the renewal's CAS fails with 409 and the claim drops at once,
// but the re-read shows our last confirmed spec, so the term resumes with the same token and the
// same deadline; a restored OLD copy of our record is not taken for our term.
TEST_F(ElectorTest, AMetadataOnlyChangeThatMakesARenewalConflictResumesTheSameTerm) {
  auto a = started("a");
  const LeaseRecord first = stored();
  clock.advance(2s);  // a renewal
  const LeaseRecord renewed = stored();
  ASSERT_NE(renewed.renewTime, first.renewTime);
  const auto before = a->now();
  a->store->setLatency(100ms);
  clock.advance(2s);  // the next renewal is on its way (arrives in 100 ms)
  LeaseRecord edited = stored();
  edited.opaque = R"({"metadata":{"labels":{"team":"payments"}}})";
  backend.put(edited);
  clock.advance(100ms);                     // the renewal reaches the backend: 409
  clock.advance(100ms);                     // its answer, then the re-read goes out
  clock.advance(200ms);                     // the re-read's answer
  EXPECT_TRUE(a->saw(Kind::kRenewFailed));  // the 409
  const auto l = a->now();
  EXPECT_TRUE(l.leader);
  EXPECT_EQ(l.fencingToken, before.fencingToken);

  // An old copy of our record (an earlier renewTime) put back: not our term any more.
  auto b = started("b");
  a->store->setLatency(0ms);
  LeaseRecord old = first;
  backend.put(old);
  clock.runDue();
  EXPECT_FALSE(a->now().leader);
}

TEST_F(ElectorTest, RenewalEveryRetryPeriodKeepsTokenAndAcquireTime) {
  auto a = started("a");
  const auto acquired = stored();

  clock.advance(2s);
  EXPECT_EQ(stored().leaseTransitions, acquired.leaseTransitions);
  EXPECT_EQ(stored().acquireTime, acquired.acquireTime);
  EXPECT_EQ(stored().renewTime, clock.wallNow());
  EXPECT_NE(stored().resourceVersion, acquired.resourceVersion);
  EXPECT_EQ(a->now().validUntilMono, clock.now() + 10s);

  const int before = a->store->counters().total();
  clock.advance(60s);
  // One PUT per period and nothing else: the leader never reads before renewing.
  EXPECT_EQ(a->store->counters().total() - before, 30);
  EXPECT_EQ(a->store->counters().get, 1);
  EXPECT_TRUE(a->now().leader);
  EXPECT_EQ(a->now().fencingToken, 0);
}

struct TakeoverCase {
  const char* name;
  std::string holder;  // "self" = our own identity, written by an earlier process
  std::int32_t holderDurationSeconds;
  bool ancientRenewTime;
  Duration takeoverAfter;
};

class TakeoverTest : public ElectorFixture, public ::testing::WithParamInterface<TakeoverCase> {};

TEST_P(TakeoverTest, TakesOverExactlyWhenTheObservedLeaseExpires) {
  const auto& c = GetParam();
  const std::string holder = c.holder == "self" ? "me" : c.holder;
  seed(holder, 7, c.holderDurationSeconds,
       c.ancientRenewTime
           ? std::optional<WallTime>(std::chrono::sys_days(std::chrono::year(2000) / 1 / 1))
           : std::nullopt);
  const auto seeded = stored();
  auto me = replica("me");
  me->elector->start();
  clock.runDue();  // the first read: observedAt = now

  if (c.takeoverAfter > Duration::zero()) {
    clock.advance(c.takeoverAfter - 1ms);
    EXPECT_FALSE(me->now().leader);
    EXPECT_EQ(stored().resourceVersion, seeded.resourceVersion) << "took over early";
    EXPECT_EQ(me->now().holder, holder);
    clock.advance(1ms);
  }
  EXPECT_TRUE(me->now().leader);
  EXPECT_EQ(stored().holderIdentity, "me");
  EXPECT_EQ(stored().leaseTransitions, 8);
  EXPECT_EQ(me->now().fencingToken, 8);
  EXPECT_EQ(stored().acquireTime, clock.wallNow());
  EXPECT_EQ(stored().leaseDurationSeconds, 15);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TakeoverTest,
    ::testing::Values(
        TakeoverCase{"OtherHolder", "other", 15, false, 15s},
        // Wall clocks are never trusted: an ancient renewTime does not shorten the wait.
        TakeoverCase{"AncientRenewTime", "other", 15, true, 15s},
        // The holder's own leaseDurationSeconds counts, not our flag.
        TakeoverCase{"LongerHolderDuration", "other", 60, false, 60s},
        TakeoverCase{"ShorterHolderDuration", "other", 5, false, 5s},
        TakeoverCase{"ReleasedLeaseIsTakenAtOnce", "", 1, false, 0s},
        // Our name, but not this process's write (a restart): another holder.
        TakeoverCase{"OwnIdentityFromEarlierProcess", "self", 15, false, 15s}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(ElectorTest, EveryChangeRestartsTheWaitFromOurOwnObservation) {
  seed("other", 1);
  auto me = started("me");
  clock.advance(14s);
  seed("other", 1);  // a renewal by the holder (new resourceVersion), seen through the watch
  clock.runDue();
  clock.advance(14s);
  EXPECT_FALSE(me->now().leader);
  EXPECT_EQ(stored().holderIdentity, "other");
  clock.advance(1s);
  EXPECT_TRUE(me->now().leader);
}

TEST_F(ElectorTest, FollowerWaitsOnATimerInsteadOfPolling) {
  auto a = started("a");
  auto b = replica("b");
  b->elector->start();
  clock.advance(120s);
  EXPECT_TRUE(a->now().leader);
  EXPECT_FALSE(b->now().leader);
  EXPECT_EQ(b->store->counters().total(), 1) << "a follower with a healthy watch only reads once";
}

TEST_F(ElectorTest, PollModeFollowerReadsEveryJitteredPeriod) {
  auto a = started("a");
  auto b = replica("b", FollowerMode::kPoll);  // random01 = 0.5: every 2s + 0.5*1.2*2s = 3.2s
  b->elector->start();
  clock.runDue();
  clock.advance(32s);
  EXPECT_EQ(b->store->counters().get, 11);
  EXPECT_EQ(b->store->counters().update, 0);
}

TEST_F(ElectorTest, BrokenWatchFallsBackToPolling) {
  auto a = started("a");
  auto b = started("b");
  b->store->setWatchHealthy(false);
  clock.advance(32s);
  EXPECT_GE(b->store->counters().get, 10);
  b->store->setWatchHealthy(true);
  clock.runDue();
  const int gets = b->store->counters().get;
  clock.advance(32s);
  EXPECT_EQ(b->store->counters().get, gets);
}

TEST_F(ElectorTest, ConflictLeadsToReReadAndNoFalseLeadership) {
  auto a = started("a");
  a->store->setLatency(100ms);
  // Somebody writes behind a's back and a misses the notification.
  a->store->setWatchHealthy(false);
  clock.runDue();
  seed("intruder", 3);
  clock.advance(1900ms);  // a's renewal is sent at +2s after acquiring
  ASSERT_TRUE(a->now().leader);
  clock.advance(300ms);  // the PUT reached the store and its 409 came back
  EXPECT_FALSE(a->now().leader) << "a conflict must drop the claim before the re-read answers";
  EXPECT_TRUE(a->saw(Kind::kRenewFailed));
  clock.advance(200ms);  // the re-read answered
  EXPECT_FALSE(a->now().leader);
  EXPECT_EQ(a->now().holder, "intruder");
  EXPECT_EQ(stored().holderIdentity, "intruder");
}

TEST_F(ElectorTest, LostResponseNeverExtendsLeadershipPastLastConfirmedWrite) {
  auto a = started("a");
  a->store->setWatchHealthy(false);  // so a cannot learn of the applied write from a notification
  clock.runDue();
  const MonoTime confirmedSend = clock.now();
  a->store->loseNextResponses(1);
  clock.advance(2s);  // renewal sent and applied, answer lost
  EXPECT_EQ(stored().renewTime, clock.wallNow()) << "the store applied the write";
  EXPECT_TRUE(a->now().leader);
  EXPECT_EQ(a->now().validUntilMono, confirmedSend + 10s);
  a->store->setPartitioned(true);  // and nothing gets through after it
  clock.advance(8s - 1ns);
  EXPECT_TRUE(a->now().leader);
  clock.advance(1ns);
  EXPECT_FALSE(a->now().leader);
  EXPECT_TRUE(a->saw(Kind::kSteppedDown));
}

TEST_F(ElectorTest, LostWriteIsRecognisedOnReadAsOfItsSendTime) {
  auto a = started("a");
  a->store->setWatchHealthy(false);
  clock.runDue();
  a->store->loseNextResponses(1);
  clock.advance(2s);
  const MonoTime lostSend = clock.now();
  // Next renewal conflicts (the lost write moved the resourceVersion), the re-read finds the
  // lost write: leadership continues, measured from when the lost write was sent.
  clock.advance(2s);
  EXPECT_TRUE(a->now().leader);
  EXPECT_EQ(stored().holderIdentity, "a");
  EXPECT_EQ(a->now().fencingToken, 0);
  EXPECT_GE(a->now().validUntilMono, lostSend + 10s);
}

TEST_F(ElectorTest, StepsDownExactlyAtTheRenewDeadlineAndKeepsCompeting) {
  auto a = started("a");
  const MonoTime sent = clock.now();
  a->store->setPartitioned(true);
  clock.advance(10s - 1ns);
  EXPECT_TRUE(a->now().leader);
  EXPECT_FALSE(a->saw(Kind::kSteppedDown));
  clock.advance(1ns);
  EXPECT_EQ(clock.now(), sent + 10s);
  EXPECT_FALSE(a->now().leader);
  EXPECT_TRUE(a->saw(Kind::kSteppedDown));
  // The API comes back: nobody else took the lease, so a takes it again in a new term (once
  // the request still in flight has timed out: 5 s).
  a->store->setPartitioned(false);
  clock.advance(7s);
  EXPECT_TRUE(a->now().leader);
  EXPECT_EQ(a->now().fencingToken, 1);
}

TEST_F(ElectorTest, PausedProcessAnswersNotLeaderOnItsFirstQuery) {
  auto a = started("a");
  ASSERT_TRUE(a->now().leader);
  clock.jump(45s);  // 3 x D with no callback run: SIGSTOP, a GC pause, a frozen VM
  EXPECT_FALSE(a->now().leader);
  EXPECT_FALSE(a->now().validUntil);
}

TEST_F(ElectorTest, TransientErrorsHonourRetryAfter) {
  auto a = replica("a");
  a->store->failNext(1, StoreStatus::kTransient, 7s);
  a->elector->start();
  clock.runDue();
  EXPECT_FALSE(backend.current());
  clock.advance(7s - 1ms);
  EXPECT_FALSE(backend.current());
  clock.advance(1ms);
  EXPECT_TRUE(a->now().leader);
}

TEST_F(ElectorTest, LeaderRetriesEveryPeriodDespiteALongRetryAfter) {
  auto a = started("a");
  a->store->failNext(1, StoreStatus::kTransient, 30s);  // 429 with Retry-After: 30
  clock.advance(2s);                                    // the renewal is refused
  EXPECT_TRUE(a->saw(Kind::kRenewFailed));
  clock.advance(2s);  // retried after P, not after 30 s
  EXPECT_TRUE(a->now().leader);
  EXPECT_EQ(a->now().validUntilMono, clock.now() + 10s);
  EXPECT_FALSE(a->saw(Kind::kSteppedDown));
}

TEST_F(ElectorTest, DeletedLeaseIsCreatedAgain) {
  auto a = started("a");
  auto b = started("b");
  backend.remove();
  clock.runDue();
  EXPECT_NE(a->now().leader, b->now().leader) << "exactly one recreated it";
  ASSERT_TRUE(backend.current());
  // Deleting the Lease resets the fencing token: the README warns about it.
  EXPECT_EQ(stored().leaseTransitions, 0);
}

TEST_F(ElectorTest, ForeignWriteSeenThroughTheWatchEndsLeadershipAtOnce) {
  auto a = started("a");
  seed("usurper", 9);
  clock.runDue();
  EXPECT_FALSE(a->now().leader);
  EXPECT_EQ(a->now().holder, "usurper");
  EXPECT_TRUE(a->saw(Kind::kSteppedDown));
  EXPECT_TRUE(a->saw(Kind::kNewLeaderObserved));
}

TEST_F(ElectorTest, RejectedWriteIsRetriedAndNeverClaimed) {
  auto a = replica("a");
  a->store->failNext(3, StoreStatus::kFatal);
  a->elector->start();
  clock.advance(5s);
  EXPECT_FALSE(a->now().leader);
  clock.advance(5s);
  EXPECT_TRUE(a->now().leader);
}

// A replica the store refuses (no RBAC grant) says why in leadership(), not only in the log,
// and says it once: the problem stays shown until a request of the refused kind is answered.
TEST_F(ElectorTest, ARefusedReplicaShowsTheProblemUntilTheStoreAnswersAgain) {
  auto a = replica("a");
  a->store->failNext(3, StoreStatus::kFatal);
  a->elector->start();
  clock.runDue();
  EXPECT_EQ(a->now().problem, "injected failure");
  clock.advance(5s);
  EXPECT_FALSE(a->now().leader);
  EXPECT_EQ(a->now().problem, "injected failure");
  int said = 0;
  for (const auto& e : a->events)
    said += e.kind == Kind::kStoreFailed ? 1 : 0;
  EXPECT_EQ(said, 1);
  clock.advance(5s);
  EXPECT_TRUE(a->now().leader);
  EXPECT_EQ(a->now().problem, "");
  bool cleared = false;
  for (const auto& e : a->events)
    cleared |= e.kind == Kind::kObserved && e.detail.find("answers") != std::string::npos;
  EXPECT_TRUE(cleared);
}

// Reads answered, writes refused (get but not update granted): the answered reads must not
// clear the write's refusal every P, and a follower never claims.
TEST_F(ElectorTest, AnsweredReadsDoNotHideARefusedWrite) {
  seed("gone", 3, 15, clock.wallNow());
  auto a = replica("a", FollowerMode::kPoll);
  a->store->setWritesRefused(true);
  a->elector->start();
  clock.advance(40s);  // the seeded lease expired long ago: a tries to take it every P
  EXPECT_FALSE(a->now().leader);
  EXPECT_EQ(a->now().problem, "writes refused");
  EXPECT_EQ(a->now().holder, "gone");
  int said = 0;
  for (const auto& e : a->events)
    said += e.kind == Kind::kStoreFailed ? 1 : 0;
  EXPECT_EQ(said, 1);
  a->store->setWritesRefused(false);
  clock.advance(5s);
  EXPECT_TRUE(a->now().leader);
  EXPECT_EQ(a->now().problem, "");
  EXPECT_EQ(stored().leaseTransitions, 4);
}

// --renew-interval: the leader writes I after its last confirmed renewal, and after a failure
// retries every P; the claim still ends at S + R of the last confirmed write.
TEST_F(ElectorTest, RenewsEveryRenewIntervalAndRetriesEveryRetryPeriod) {
  timings = ElectionTimings{60s, 40s, 2s, 1.2};
  timings.renewInterval = 15s;
  auto a = started("a");
  ASSERT_TRUE(a->now().leader);
  const int afterAcquire = a->store->counters().update + a->store->counters().create;
  clock.advance(14900ms);
  EXPECT_EQ(a->store->counters().update + a->store->counters().create, afterAcquire);
  clock.advance(200ms);  // 15.1 s: the first renewal
  EXPECT_EQ(a->store->counters().update + a->store->counters().create, afterAcquire + 1);
  clock.advance(60s);  // 4 more in 60 s, not 30
  EXPECT_EQ(a->store->counters().update + a->store->counters().create, afterAcquire + 5);
  // Renewals from now on fail: retried every P, and the claim ends R after the last success.
  const auto lastSuccess = clock.now() - 100ms;  // the renewal at 75 s
  a->store->failNext(1000, StoreStatus::kTransient);
  clock.advance(15s);  // at 90 s the next renewal fails
  const int tries = a->store->counters().update;
  clock.advance(10s);
  EXPECT_GE(a->store->counters().update - tries, 4);  // every 2 s, not every 15 s
  EXPECT_TRUE(a->now().leader);
  clock.advance(lastSuccess + 40s - 1ms - clock.now());
  EXPECT_TRUE(a->now().leader);
  clock.advance(2ms);
  EXPECT_FALSE(a->now().leader);
}

// A renewal sent before the deadline but answered after it: the leader says false at the
// deadline (it cannot know yet), then true again with the SAME token once the answer shows the
// write landed. That is the truth, not a glitch: the write was a compare-and-swap on the
// record of this term, so nobody else can have led in between. README "Leadership can come
// back with the same token" documents it for the main container.
TEST_F(ElectorTest, LateRenewalConfirmationResumesTheSameTerm) {
  auto a = started("a");
  auto b = started("b");
  a->store->failNext(3, StoreStatus::kTransient);  // renewals at 2, 4 and 6 s fail
  clock.advance(7900ms);
  ASSERT_TRUE(a->now().leader);
  a->store->setLatency(1200ms);  // the renewal sent at 8 s lands at 9.2 s, answered at 10.4 s
  clock.advance(2100ms);         // t = 10 s: the deadline of the write sent at 0 s
  EXPECT_FALSE(a->now().leader);
  EXPECT_TRUE(a->saw(Kind::kSteppedDown));
  EXPECT_EQ(stored().renewTime, clock.wallNow() - 2s) << "the renewal sent at 8 s landed";
  a->events.clear();
  clock.advance(400ms);  // t = 10.4 s
  const auto l = a->now();
  EXPECT_TRUE(l.leader);
  EXPECT_EQ(l.fencingToken, 0) << "the same term: no transition was written";
  EXPECT_EQ(stored().leaseTransitions, 0);
  EXPECT_EQ(l.validUntilMono, clock.now() - 2400ms + 10s) << "counted from the send at 8 s";
  ASSERT_TRUE(a->saw(Kind::kAcquired));
  EXPECT_FALSE(b->now().leader);
}

TEST_F(ElectorTest, SteppingDownIsVoluntaryOnlyWhenAsked) {
  auto a = started("a");
  a->store->setPartitioned(true);
  clock.advance(10s);
  a->store->setPartitioned(false);
  clock.advance(7s);
  ASSERT_TRUE(a->now().leader);
  a->elector->releaseFor(30s, nullptr);
  clock.runDue();
  std::vector<bool> stepDowns;
  for (const auto& e : a->events)
    if (e.kind == Kind::kSteppedDown) stepDowns.push_back(e.voluntary);
  EXPECT_EQ(stepDowns, (std::vector<bool>{false, true})) << "deadline, then release";
}

}  // namespace
}  // namespace leasehold::election::testing

// The etcd campaign on MemoryEtcd and the FakeClock: who leads, with which token, and when the
// claim ends (the claim rule, pauses, partitions, expiry, revoke), the keep-alive's confirming
// read (raft terms, a stale raft leader), the queue (etcd's election layout), lost answers,
// foreign keys, eligibility, and a randomized run with faults in which two claims never overlap
// and tokens only go up.
#include "etcd/EtcdCampaign.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "MemoryEtcd.h"

namespace leasehold::etcd {
namespace {

using election::ElectorEvent;
using namespace std::chrono_literals;
using Kind = ElectorEvent::Kind;

struct Candidate {
  Candidate(time::FakeClock& clock, test::MemoryEtcd& etcd, std::string name,
            election::ElectionTimings timings = test::testTimings())
      : campaign(clock, etcd, EtcdCampaignConfig{name, "elect", timings}) {
    campaign.setEventHandler([this](const ElectorEvent& e) { events.push_back(e); });
  }
  bool leads() const { return campaign.leadership().leader; }
  std::int64_t token() const { return campaign.leadership().fencingToken.value_or(-1); }
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
  EtcdCampaign campaign;
  std::vector<ElectorEvent> events;
};

class EtcdCampaignTest : public ::testing::Test {
 protected:
  std::unique_ptr<Candidate> candidate(const std::string& name) {
    return std::make_unique<Candidate>(clock, etcd, name);
  }
  // a, then b once a leads: a leads, b queues behind it.
  std::pair<std::unique_ptr<Candidate>, std::unique_ptr<Candidate>> leaderAndFollower() {
    auto a = candidate("a");
    auto b = candidate("b");
    a->campaign.start();
    settle();
    b->campaign.start();
    settle();
    return {std::move(a), std::move(b)};
  }
  // Lets every answer that is due arrive (the fake's latency is zero unless a test sets it).
  void settle() {
    for (int i = 0; i < 20; ++i)
      clock.runDue();
  }

  time::FakeClock clock;
  test::MemoryEtcd etcd{clock};
};

TEST_F(EtcdCampaignTest, TheFirstCandidateLeadsWithItsKeysCreateRevisionAsToken) {
  auto a = candidate("a");
  a->campaign.start();
  EXPECT_FALSE(a->leads());
  settle();
  ASSERT_TRUE(a->leads());
  // etcd's election layout: <election>/<lease id in hex>, the value is the identity.
  const auto keys = etcd.keysUnder("elect/");
  ASSERT_EQ(keys.size(), 1u);
  char hex[32];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(keys[0].lease));
  EXPECT_EQ(keys[0].key, std::string("elect/") + hex);
  EXPECT_EQ(keys[0].value, "a");
  EXPECT_EQ(a->campaign.key(), keys[0].key);
  const auto l = a->campaign.leadership();
  EXPECT_EQ(l.holder, "a");
  EXPECT_EQ(l.fencingToken, keys[0].createRevision);
  ASSERT_TRUE(l.validUntilMono);
  EXPECT_EQ(a->count(Kind::kAcquired), 1);
  EXPECT_EQ(a->events.back().token, keys[0].createRevision);
}

TEST_F(EtcdCampaignTest, TheLeaderRenewsEveryPAndItsClaimEndsAtTheLastConfirmedSendPlusR) {
  auto a = candidate("a");
  const auto grantSentAt = clock.now();
  a->campaign.start();
  settle();
  ASSERT_TRUE(a->leads());
  EXPECT_EQ(*a->campaign.leadership().validUntilMono, grantSentAt + 3s);
  clock.advance(1s);  // the keep-alive, sent at +1 s, confirmed at once
  EXPECT_EQ(*a->campaign.leadership().validUntilMono, grantSentAt + 1s + 3s);
  EXPECT_EQ(etcd.count("lease/keepalive"), 1);
  EXPECT_GE(a->count(Kind::kRenewed), 1);
  // Keep-alives sent but not answered: the claim ends at the last confirmed send + R, exactly.
  etcd.latency = 10s;
  const auto lastConfirmed = clock.now();
  clock.advance(3s - 1ms);
  EXPECT_TRUE(a->leads());
  clock.advance(1ms);
  EXPECT_FALSE(a->leads());
  EXPECT_EQ(a->count(Kind::kSteppedDown), 1);
  EXPECT_NE(a->details(Kind::kSteppedDown).find("renew deadline (3s)"), std::string::npos);
  EXPECT_EQ(clock.now(), lastConfirmed + 3s);
}

TEST_F(EtcdCampaignTest, ASecondCandidateQueuesAndLeadsAsSoonAsTheLeaderRevokes) {
  auto [a, b] = leaderAndFollower();
  ASSERT_TRUE(a->leads());
  EXPECT_FALSE(b->leads());
  EXPECT_EQ(b->campaign.leadership().holder, "a");
  EXPECT_EQ(b->campaign.leadership().fencingToken, a->token());
  const auto aToken = a->token();
  bool stopped = false;
  a->campaign.stop([&] { stopped = true; });
  // Stops claiming before anything is sent back.
  EXPECT_FALSE(a->leads());
  EXPECT_EQ(a->events.back().kind, Kind::kSteppedDown);
  EXPECT_TRUE(a->events.back().voluntary);
  const auto stoppedAt = clock.now();
  settle();
  EXPECT_TRUE(stopped);
  ASSERT_TRUE(b->leads());
  EXPECT_EQ(clock.now(), stoppedAt);  // no waiting for an expiry
  EXPECT_GT(b->token(), aToken);
  EXPECT_EQ(etcd.keysUnder("elect/").size(), 1u);
  EXPECT_EQ(a->count(Kind::kReleased), 1);
}

TEST_F(EtcdCampaignTest, ACrashedLeaderIsFollowedOnlyOnceItsLeaseExpiredOnTheServer) {
  auto [a, b] = leaderAndFollower();
  clock.advance(1s);  // a's keep-alive
  const auto lastKeepAlive = clock.now();
  a.reset();  // kill -9: nothing more from a
  clock.advance(5s - 1ms);
  EXPECT_FALSE(b->leads());
  clock.advance(1ms);  // the lease expires D after the last keep-alive; its key goes with it
  settle();
  EXPECT_TRUE(b->leads());
  EXPECT_EQ(clock.now(), lastKeepAlive + 5s);
}

TEST_F(EtcdCampaignTest, APausedLeaderSaysFalseWhenItWakesAndItsTermIsOver) {
  auto [a, b] = leaderAndFollower();
  const auto aToken = a->token();
  const auto aKey = etcd.keysUnder("elect/").front();
  clock.jump(10s);           // SIGSTOP for 2 x D: nothing ran meanwhile (here: on either candidate)
  EXPECT_FALSE(a->leads());  // asked before anything ran
  settle();
  // a's lease expired on the server and took its key: whoever leads now has a new term.
  EXPECT_FALSE(etcd.get(aKey.key) && etcd.get(aKey.key)->createRevision == aKey.createRevision);
  clock.advance(1s);
  settle();
  const int leaders = a->leads() + b->leads();
  ASSERT_EQ(leaders, 1);
  EXPECT_GT((a->leads() ? a : b)->token(), aToken);
  EXPECT_GE(a->count(Kind::kSteppedDown), 1);
}

TEST_F(EtcdCampaignTest, ALeaderCutOffStepsDownByRAndResumesTheSameTermIfItsLeaseLived) {
  auto a = candidate("a");
  a->campaign.start();
  settle();
  const auto token = a->token();
  clock.advance(1s);
  const auto lastConfirmed = clock.now();
  etcd.setReachable(false);
  clock.advance(3s - 1ms);
  EXPECT_TRUE(a->leads());
  clock.advance(1ms);
  EXPECT_FALSE(a->leads());
  EXPECT_GE(a->count(Kind::kRenewFailed), 1);
  EXPECT_EQ(clock.now(), lastConfirmed + 3s);
  // Back before the lease expired on the server (D = 5 s after the last keep-alive): nobody
  // can have led meanwhile, since a's key stayed the oldest, so the term goes on.
  etcd.setReachable(true);
  clock.advance(1s);
  settle();
  EXPECT_TRUE(a->leads());
  EXPECT_EQ(a->token(), token);
  EXPECT_EQ(a->count(Kind::kAcquired), 2);
}

TEST_F(EtcdCampaignTest, AJoinWhoseAnswerWasLostFindsItsOwnKey) {
  auto a = candidate("a");
  a->campaign.start();  // the grant and the first look are applied at once
  etcd.loseAnswers = true;
  settle();  // the grant's answer was computed before: it arrives, and the txn goes out
  ASSERT_EQ(etcd.count("kv/txn"), 1);
  EXPECT_FALSE(a->leads());
  etcd.loseAnswers = false;
  clock.advance(1s);
  settle();
  EXPECT_EQ(etcd.count("kv/txn"), 2);
  ASSERT_TRUE(a->leads());
  EXPECT_EQ(etcd.keysUnder("elect/").size(), 1u);
  EXPECT_EQ(a->token(), etcd.keysUnder("elect/")[0].createRevision);
}

TEST_F(EtcdCampaignTest, AKeyWithoutALeaseBlocksTheElectionAndIsNamed) {
  etcd.put("elect/zzz", "left behind");
  auto a = candidate("a");
  a->campaign.start();
  settle();
  EXPECT_FALSE(a->leads());
  EXPECT_EQ(a->campaign.leadership().holder, "left behind");
  const std::string said = a->details(Kind::kStoreFailed);
  EXPECT_NE(said.find("elect/zzz is not attached to a lease"), std::string::npos) << said;
  EXPECT_NE(said.find("--lease-name"), std::string::npos) << said;
  etcd.remove("elect/zzz");
  settle();
  EXPECT_TRUE(a->leads());
}

TEST_F(EtcdCampaignTest, AKeyDeletedBySomebodyElseEndsTheClaimAtOnce) {
  auto a = candidate("a");
  a->campaign.start();
  settle();
  const auto token = a->token();
  const auto key = *a->campaign.key();
  etcd.remove(key);
  settle();
  // It queued again with a new key (a new term, a higher token), alone, so it leads again.
  EXPECT_EQ(a->count(Kind::kSteppedDown), 1);
  ASSERT_TRUE(a->leads());
  EXPECT_GT(a->token(), token);
  EXPECT_EQ(*a->campaign.key(), key);  // the same name (the same lease), created anew
}

TEST_F(EtcdCampaignTest, AnIneligibleCandidateSendsNothingUntilReconsidered) {
  auto a = candidate("a");
  bool eligible = false;
  a->campaign.setEligibility([&] { return eligible; });
  a->campaign.start();
  settle();
  EXPECT_TRUE(etcd.methods.empty()) << "no lease, no key, no range for a shard not ours";
  EXPECT_EQ(etcd.openWatches(), 0);
  EXPECT_FALSE(a->campaign.key());
  EXPECT_FALSE(a->leads());
  eligible = true;
  a->campaign.reconsider();
  settle();
  EXPECT_TRUE(a->leads());
}

// Shard mode: assigned, unassigned and assigned again while the first grant is on its way. That
// grant's lease is given back, and a new one is asked for (once nothing was, and the shard
// stayed without a candidate until the assignment changed again).
TEST_F(EtcdCampaignTest, EligibleAgainWhileTheFirstGrantIsInFlightGrantsAgain) {
  auto a = candidate("a");
  bool eligible = true;
  a->campaign.setEligibility([&] { return eligible; });
  etcd.latency = 100ms;
  a->campaign.start();
  clock.advance(10ms);  // the grant is on its way
  eligible = false;
  a->campaign.reconsider();
  eligible = true;
  a->campaign.reconsider();
  clock.advance(1s);
  settle();
  EXPECT_TRUE(a->leads());
  EXPECT_EQ(etcd.count("lease/grant"), 2);
  EXPECT_EQ(etcd.count("lease/revoke"), 1);
}

TEST_F(EtcdCampaignTest, AWaitingKeyNoLongerEligibleLeavesTheQueueButALeaderStays) {
  auto [a, b] = leaderAndFollower();
  bool eligible = false;
  a->campaign.setEligibility([&] { return eligible; });
  b->campaign.setEligibility([&] { return eligible; });
  a->campaign.reconsider();  // leads: left alone (shard mode drops and releases a leader)
  b->campaign.reconsider();  // waits behind a: leaves the queue, its lease revoked
  settle();
  EXPECT_TRUE(a->leads());
  EXPECT_FALSE(b->campaign.key());
  const auto keys = etcd.keysUnder("elect/");
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].value, "a");
  // And a does not hand the lock to b when it goes.
  a->campaign.stop(nullptr);
  settle();
  EXPECT_FALSE(b->leads());
  EXPECT_TRUE(etcd.keysUnder("elect/").empty());
}

TEST_F(EtcdCampaignTest, ReleaseForACooldownLetsTheNextLeadAndQueuesAgainAfterIt) {
  auto [a, b] = leaderAndFollower();
  bool released = false;
  a->campaign.releaseFor(2s, [&] { released = true; });
  settle();
  EXPECT_TRUE(released);
  EXPECT_TRUE(b->leads());
  EXPECT_FALSE(a->campaign.key());
  clock.advance(2s);
  settle();
  ASSERT_TRUE(a->campaign.key());
  EXPECT_FALSE(a->leads());
  EXPECT_EQ(a->campaign.leadership().holder, "b");
}

TEST_F(EtcdCampaignTest, AWatchThatEndsIsOpenedAgainAndMissesNothing) {
  auto [a, b] = leaderAndFollower();
  etcd.endWatches("the member went away");
  settle();
  a->campaign.stop(nullptr);  // b's watch is down: only its next look tells it
  settle();
  EXPECT_FALSE(b->leads());
  clock.advance(1s);
  settle();
  EXPECT_TRUE(b->leads());
  EXPECT_NE(b->details(Kind::kStoreFailed).find("the member went away"), std::string::npos);
}

TEST_F(EtcdCampaignTest, AKeepAliveWithoutAnswerMovesTheWatchAsWell) {
  auto [a, b] = leaderAndFollower();
  // b's member is cut off without a reset: its watch stays open and says nothing more, and
  // b's next keep-alive gets no answer.
  etcd.freezeWatches();
  EtcdReply none;
  none.message = "no answer from memory: timed out";
  etcd.failNext("lease/keepalive", none);
  etcd.failNext("lease/keepalive", none);  // a's and b's, whichever goes first
  clock.advance(1s);
  settle();
  a->campaign.stop(nullptr);
  settle();
  EXPECT_TRUE(b->leads()) << "b heard of the revoke on a watch it opened again";
}

TEST_F(EtcdCampaignTest, ImpossibleSettingsAreRefusedWithTheirReason) {
  auto bad = test::testTimings();
  bad.renewDeadline = 6s;  // R >= D
  EXPECT_THROW(EtcdCampaign(clock, etcd, (EtcdCampaignConfig{"a", "elect", bad})),
               std::invalid_argument);
  EXPECT_THROW(EtcdCampaign(clock, etcd, (EtcdCampaignConfig{"", "elect", test::testTimings()})),
               std::invalid_argument);
  EXPECT_THROW(EtcdCampaign(clock, etcd, (EtcdCampaignConfig{"a", "", test::testTimings()})),
               std::invalid_argument);
}

// etcd refusing the candidate (no role on the prefix, a wrong password): /leader's "problem"
// says so until a request is answered again, as on Kubernetes; a transient failure is no
// problem of that kind.
TEST_F(EtcdCampaignTest, ARefusedCandidateShowsTheProblemUntilEtcdAnswersAgain) {
  EtcdReply denied;
  denied.kind = EtcdReply::Kind::kDenied;
  denied.code = kCodePermissionDenied;
  denied.message = "memory answered 403: etcdserver: permission denied (code 7)";
  EtcdReply unavailable;
  unavailable.message = "no answer from memory: connection reset";
  etcd.failNext("lease/grant", unavailable);
  auto a = candidate("a");
  a->campaign.start();
  settle();
  EXPECT_EQ(a->campaign.leadership().problem, "");
  etcd.failNext("lease/grant", denied);
  clock.advance(1s);  // the retry after P
  settle();
  EXPECT_FALSE(a->leads());
  EXPECT_EQ(a->campaign.leadership().problem,
            "granting a lease: memory answered 403: etcdserver: permission denied (code 7)");
  clock.advance(1s);  // the next grant is answered
  settle();
  EXPECT_TRUE(a->leads());
  EXPECT_EQ(a->campaign.leadership().problem, "");
  EXPECT_NE(a->details(Kind::kObserved).find("answers this candidate's requests again"),
            std::string::npos);
}

// ---- the keep-alive's confirmation (docs/design.md, "The etcd store") ----

// A keep-alive counts only once a linearizable read sent after its answer came answers in the
// same raft term. One renewal (sent at t0 + 1 s) under each outcome of that pair; the claim
// then ends at that keep-alive's send + R, or still at the grant's (t0) + R. The renewal after
// it (t0 + 2 s, no fault) is confirmed either way, so a claim is never lost for good.
TEST_F(EtcdCampaignTest, AKeepAliveCountsOnlyWhenAReadAfterItAnswersInTheSameRaftTerm) {
  EtcdReply unavailable;
  unavailable.message = "no answer from memory: connection reset";
  EtcdReply timedOut;
  timedOut.message = "no answer from memory within 3000 ms";
  EtcdReply denied;
  denied.kind = EtcdReply::Kind::kDenied;
  denied.code = kCodePermissionDenied;
  denied.message = "memory answered 403: etcdserver: permission denied (code 7)";
  EtcdReply malformedAnswer;
  malformedAnswer.kind = EtcdReply::Kind::kOk;
  malformedAnswer.body = "not json";
  struct Case {
    const char* name;
    std::uint64_t term;                          // every answer's, from the real leader
    std::optional<std::uint64_t> keepAliveTerm;  // a stale raft leader's answer instead
    std::optional<EtcdReply> readFails;          // the confirming read's answer instead
    bool confirmed;
  };
  const std::vector<Case> cases = {
      {"keep-alive and read in term 2", 2, std::nullopt, std::nullopt, true},
      {"keep-alive and read in term 3", 3, std::nullopt, std::nullopt, true},
      {"keep-alive in term 2 from a stale leader, read in term 3", 3, 2, std::nullopt, false},
      {"keep-alive in term 4, read in term 3", 3, 4, std::nullopt, false},
      {"read without answer", 3, std::nullopt, unavailable, false},
      {"read timed out", 3, std::nullopt, timedOut, false},
      {"read denied", 3, std::nullopt, denied, false},
      {"read answer malformed", 3, std::nullopt, malformedAnswer, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    time::FakeClock localClock;
    test::MemoryEtcd localEtcd(localClock);
    localEtcd.raftTerm = c.term;
    EtcdCampaign campaign(localClock, localEtcd,
                          EtcdCampaignConfig{"a", "elect", test::testTimings()});
    std::vector<ElectorEvent> events;
    campaign.setEventHandler([&](const ElectorEvent& e) { events.push_back(e); });
    const auto t0 = localClock.now();
    campaign.start();
    for (int i = 0; i < 20; ++i)
      localClock.runDue();
    ASSERT_TRUE(campaign.leadership().leader);
    const auto token = campaign.leadership().fencingToken;
    EXPECT_EQ(*campaign.leadership().validUntilMono, t0 + 3s);

    localEtcd.staleKeepAliveTerm = c.keepAliveTerm;
    if (c.readFails) localEtcd.failNext("kv/range", *c.readFails);
    localClock.advance(1s);  // the keep-alive at t0 + 1 s, then its read
    EXPECT_EQ(localEtcd.count("lease/keepalive"), 1);
    EXPECT_EQ(localEtcd.count("kv/range count_only"), 1);
    ASSERT_TRUE(campaign.leadership().leader);
    EXPECT_EQ(*campaign.leadership().validUntilMono, c.confirmed ? t0 + 1s + 3s : t0 + 3s);
    const bool failed = std::any_of(events.begin(), events.end(),
                                    [](const auto& e) { return e.kind == Kind::kRenewFailed; });
    EXPECT_EQ(failed, !c.confirmed);

    localEtcd.staleKeepAliveTerm.reset();
    localClock.advance(1s);  // t0 + 2 s: confirmed, the same term goes on
    ASSERT_TRUE(campaign.leadership().leader);
    EXPECT_EQ(*campaign.leadership().validUntilMono, t0 + 2s + 3s);
    EXPECT_EQ(campaign.leadership().fencingToken, token);
  }
}

TEST_F(EtcdCampaignTest, TheConfirmingReadIsSentOnlyOnceTheKeepAlivesAnswerCame) {
  auto a = candidate("a");
  const auto t0 = clock.now();
  a->campaign.start();
  settle();
  ASSERT_TRUE(a->leads());
  etcd.latency = 400ms;
  clock.advance(1s);  // the keep-alive goes out at t0 + 1 s
  EXPECT_EQ(etcd.count("lease/keepalive"), 1);
  clock.advance(400ms - 1ms);
  EXPECT_EQ(etcd.count("kv/range count_only"), 0) << "a read before the answer proves nothing";
  clock.advance(1ms);  // the keep-alive's answer: now the read
  EXPECT_EQ(etcd.count("kv/range count_only"), 1);
  EXPECT_EQ(*a->campaign.leadership().validUntilMono, t0 + 3s) << "not confirmed yet";
  clock.advance(400ms);  // the read's answer: S is the keep-alive's send, not the read's
  EXPECT_EQ(*a->campaign.leadership().validUntilMono, t0 + 1s + 3s);
  clock.advance(200ms);  // t0 + 2 s
  // Linearizable (no serializable), of this candidate's own key name: inside the prefix the
  // user's role covers.
  ASSERT_EQ(etcd.countedKeys.size(), 1u);
  EXPECT_EQ(etcd.countedKeys[0], *a->campaign.key());
  // One renewal at a time: the next keep-alive P after the last one's send, never while its
  // read is on its way.
  EXPECT_EQ(etcd.count("lease/keepalive"), 2);
}

// --renew-interval on etcd: a confirmed keep-alive is followed by the next I after its send, a
// failed one by a retry P after it; the claim rule is the same (S + R of the last confirmed).
TEST_F(EtcdCampaignTest, KeepAlivesComeEveryRenewIntervalAndRetriesEveryP) {
  auto timings = test::testTimings();
  timings.leaseDuration = 20s;
  timings.renewDeadline = 12s;
  timings.renewInterval = 5s;
  Candidate a(clock, etcd, "a", timings);
  a.campaign.start();
  settle();
  ASSERT_TRUE(a.leads());
  const int before = etcd.count("lease/keepalive");
  clock.advance(4900ms);
  EXPECT_EQ(etcd.count("lease/keepalive"), before);
  clock.advance(200ms);
  EXPECT_EQ(etcd.count("lease/keepalive"), before + 1);
  clock.advance(20s);  // 4 more in 20 s, not 20
  EXPECT_EQ(etcd.count("lease/keepalive"), before + 5);
  EtcdReply refused;
  refused.kind = EtcdReply::Kind::kUnavailable;
  refused.message = "injected";
  etcd.failNext("lease/keepalive", refused);
  clock.advance(5s);  // the next keep-alive fails; its retry follows P (1 s) later
  EXPECT_EQ(etcd.count("lease/keepalive"), before + 6);
  clock.advance(1s);
  EXPECT_EQ(etcd.count("lease/keepalive"), before + 7);
  EXPECT_TRUE(a.leads());
}

TEST_F(EtcdCampaignTest, EveryRenewalIsOneKeepAliveAndOneRead) {
  auto a = candidate("a");
  a->campaign.start();
  settle();
  const int keepAlives = etcd.count("lease/keepalive");
  const int reads = etcd.count("kv/range count_only");
  clock.advance(10s);
  EXPECT_EQ(etcd.count("lease/keepalive") - keepAlives, 10);
  EXPECT_EQ(etcd.count("kv/range count_only") - reads, 10);
  EXPECT_EQ(a->count(Kind::kRenewed), 10);
}

// etcd 3.6's paused raft leader (the chaos find of 2026-12-07): after a renewal at S the holder's
// keep-alives reach a raft leader that lost its term while paused; it answers them with a TTL
// and the real leader never sees them. The claim ends at S + R, the lease expires on the server
// at S + D, and only then does the next candidate lead: never two claims.
TEST_F(EtcdCampaignTest, KeepAlivesAStaleRaftLeaderAnsweredNeverExtendTheClaim) {
  auto [a, b] = leaderAndFollower();
  clock.advance(1s);  // confirmed by the real leader
  const auto s = clock.now();
  const auto token = a->token();
  ASSERT_EQ(*a->campaign.leadership().validUntilMono, s + 3s);
  etcd.staleKeepAliveTerm = 2;  // the real leader's term is 3
  std::optional<time::MonoTime> nextTermAt;
  while (clock.now() < s + 6s) {
    clock.advance(50ms);
    settle();
    const auto at = " at +" + time::formatDuration(clock.now() - s);
    ASSERT_FALSE(a->leads() && b->leads()) << "two claims" << at;
    if (clock.now() < s + 3s) {
      ASSERT_TRUE(a->leads()) << at;
    } else {
      ASSERT_FALSE(a->leads() && a->token() == token) << "claimed past S + R" << at;
    }
    for (const auto* c : {a.get(), b.get()}) {
      if (!c->leads() || c->token() == token || nextTermAt) continue;
      nextTermAt = clock.now();  // both leases expired at S + D: either may lead next
      EXPECT_GT(c->token(), token);
    }
  }
  ASSERT_TRUE(nextTermAt);
  EXPECT_GE(*nextTermAt, s + 5s) << "a new term before the lease expired on the server";
  EXPECT_NE(a->details(Kind::kStoreFailed)
                .find("keep-alive answered in raft term 2, the read "
                      "after it in term 3: not counted"),
            std::string::npos)
      << a->details(Kind::kStoreFailed);
}

// The stale leader hears of the new term before the lease ran out on the server (S + D): the
// claim lapsed at S + R and resumes with the same token at the next confirmed keep-alive, as
// after a partition; nobody else led in between.
TEST_F(EtcdCampaignTest, AClaimThatLapsedOnStaleAnswersResumesWithTheSameToken) {
  auto [a, b] = leaderAndFollower();
  clock.advance(1s);
  const auto s = clock.now();
  const auto token = a->token();
  etcd.staleKeepAliveTerm = 2;
  clock.advance(3s);
  settle();
  EXPECT_FALSE(a->leads());
  EXPECT_FALSE(b->leads());
  EXPECT_EQ(clock.now(), s + 3s);
  etcd.staleKeepAliveTerm.reset();
  clock.advance(1s);  // the next keep-alive reaches the real leader, before S + D
  settle();
  ASSERT_TRUE(a->leads());
  EXPECT_EQ(a->token(), token);
  EXPECT_EQ(a->count(Kind::kAcquired), 2);
  EXPECT_FALSE(b->leads());
  EXPECT_EQ(b->count(Kind::kAcquired), 0);
}

// Three candidates, each on its own link to the store, under random faults (one candidate cut
// off, the whole store unreachable, latency, lost answers, stops, crashes and restarts, a stale
// raft leader answering every keep-alive): at
// every step at most one claims, and each new term's token is above every earlier one.
TEST_F(EtcdCampaignTest, UnderRandomFaultsTwoClaimsNeverOverlapAndTokensOnlyGoUp) {
  struct Replica {
    std::unique_ptr<test::MemoryEtcd::Link> link;
    std::unique_ptr<EtcdCampaign> campaign;
  };
  int overlapsChecked = 0;
  int allTerms = 0;
  for (unsigned seed = 1; seed <= 30; ++seed) {
    std::mt19937 random(seed);
    time::FakeClock localClock;
    test::MemoryEtcd localEtcd(localClock);
    std::vector<Replica> rs(3);
    const auto restart = [&](std::size_t i) {
      rs[i].campaign.reset();
      rs[i].link = std::make_unique<test::MemoryEtcd::Link>(localEtcd);
      rs[i].campaign = std::make_unique<EtcdCampaign>(
          localClock, *rs[i].link,
          EtcdCampaignConfig{std::string(1, static_cast<char>('a' + i)), "elect",
                             test::testTimings()});
      rs[i].campaign->start();
    };
    for (std::size_t i = 0; i < rs.size(); ++i)
      restart(i);
    std::int64_t highestToken = 0;
    std::string lastHolder;
    int terms = 0;
    for (int step = 0; step < 1000; ++step) {
      const int dice = static_cast<int>(random() % 100);
      const std::size_t who = random() % rs.size();
      if (dice < 4) rs[who].link->setReachable(!rs[who].link->reachable());
      if (dice == 4) localEtcd.setReachable(random() % 2 == 0);
      if (dice == 5) localEtcd.loseAnswers = random() % 3 == 0;
      if (dice == 6) localEtcd.latency = std::chrono::milliseconds(random() % 2500);
      if (dice == 7) rs[who].campaign->stop(nullptr);
      if (dice == 8) restart(who);  // kill -9 and a new process
      if (dice == 9) {  // keep-alives answered by a raft leader that lost its term, or not
        localEtcd.staleKeepAliveTerm =
            random() % 2 == 0 ? std::optional<std::uint64_t>(2) : std::nullopt;
      }
      localClock.advance(100ms);
      int leaders = 0;
      for (const auto& r : rs) {
        const auto l = r.campaign->leadership();
        if (!l.leader) continue;
        ++leaders;
        if (*l.fencingToken != highestToken || l.identity != lastHolder) {
          ASSERT_GT(*l.fencingToken, highestToken) << "seed " << seed << " step " << step;
          highestToken = *l.fencingToken;
          lastHolder = l.identity;
          ++terms;
        }
      }
      overlapsChecked += leaders > 0;
      ASSERT_LE(leaders, 1) << "seed " << seed << " step " << step;
    }
    EXPECT_GT(terms, 0) << "seed " << seed;
    allTerms += terms;
  }
  // Enough leadership to have tested something: steps with a leader, changes of term.
  EXPECT_GT(overlapsChecked, 1000);
  EXPECT_GT(allTerms, 50);
}

}  // namespace
}  // namespace leasehold::etcd

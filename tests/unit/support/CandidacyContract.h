#pragma once
// The contract of election::Candidacy (election/Candidacy.h, election/ClaimRule.h) as one
// type-parameterized suite, which every store's candidacy passes on that store's in-memory fake
// (docs/design.md, "Adding a store"). Time moves only through the FakeClock, so each rule is
// checked at the instant it must hold:
//  - a candidacy claims only while now < S + R (S: the send time of the last write or keep-alive
//    the store confirmed), computed when asked, so a paused process answers false on waking;
//  - fencing tokens only go up, term after term, whoever holds the lock;
//  - a release (stop, releaseFor) ends the claim at once, before the next holder's can begin;
//  - handOver lets the lock go to the other candidate, and ends the claim at once;
//  - shard eligibility: acquire only while eligible; holding is not affected;
//  - errors are values: a refused request is a kStoreFailed event, with Leadership::problem
//    saying so as it is told, never an exception; the candidacy leads once the store answers
//    again, and the problem is gone.
// After every step of the clock, at most one candidate leads, and a leader's validUntil is in
// the future and no later than its last confirmation + R.
//
// A store instantiates it in its own test folder,
//   INSTANTIATE_TYPED_TEST_SUITE_P(MyStore, CandidacyContract, ::testing::Types<MyFake>);
// inside namespace leasehold::election::contract, with a type that gives every candidate its
// own connection to one shared in-memory store:
//   struct MyFake {
//     explicit MyFake(time::FakeClock& clock);
//     election::ElectionTimings timings() const;  // what its candidacies run with
//     // A new candidate, not started; the fake outlives it.
//     std::unique_ptr<election::Candidacy> candidacy(const std::string& identity);
//     // Cuts (or restores) that candidate's connection: its requests are neither applied nor
//     // answered in time, and its notifications stop.
//     void setReachable(const std::string& identity, bool reachable);
//     // Before the candidate starts: its first request is refused (denied, not a transient
//     // failure); the ones after it are answered.
//     void refuseFirstRequest(const std::string& identity);
//     // Asks the lock's holder, through the store, to hand over to `to`; false where the store
//     // has no way to name the next holder (then handOver() alone is checked).
//     bool requestHandover(const std::string& to);
//   };
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "FakeClock.h"
#include "election/Candidacy.h"
#include "election/ElectionTimings.h"

namespace leasehold::election::contract {

using namespace std::chrono_literals;

template <class Fake>
class CandidacyContract : public ::testing::Test {
 protected:
  ~CandidacyContract() override {
    // Nothing is recorded while the candidates go (a store may still answer on the way out).
    for (auto& m : members_)
      m->candidacy->setEventHandler(nullptr);
  }

  struct Member {
    std::string identity;
    std::unique_ptr<Candidacy> candidacy;
    std::vector<ElectorEvent> events;
    std::optional<time::MonoTime> lastConfirmed;  // the last kAcquired or kRenewed
    std::vector<std::string> problemsWhenFailed;  // leadership().problem at each kStoreFailed

    bool leads() const { return candidacy->leadership().leader; }
    std::int64_t token() const { return candidacy->leadership().fencingToken.value_or(-1); }
    bool saw(ElectorEvent::Kind kind) const {
      return std::any_of(events.begin(), events.end(),
                         [kind](const ElectorEvent& e) { return e.kind == kind; });
    }
  };

  // A candidate with its own connection, not started; its events are recorded and checked.
  Member& join(const std::string& identity) {
    members_.push_back(std::make_unique<Member>());
    Member& m = *members_.back();
    m.identity = identity;
    m.candidacy = fake_.candidacy(identity);
    m.candidacy->setEventHandler([this, &m](const ElectorEvent& e) { onEvent(m, e); });
    return m;
  }
  Member& started(const std::string& identity) {
    Member& m = join(identity);
    m.candidacy->start();
    settle();
    return m;
  }

  // Lets every answer that is due now arrive (answers may come in several hops).
  void settle() {
    for (int i = 0; i < 20; ++i) {
      clock_.runDue();
      checkInstant();
    }
  }
  // Moves time on in steps of 10 ms, checking the invariants at every step, until `done` holds
  // or `limit` has passed; whether it held.
  bool runUntil(const std::function<bool()>& done, time::Duration limit) {
    const time::MonoTime end = clock_.now() + limit;
    while (!done()) {
      if (clock_.now() >= end) return false;
      clock_.advance(10ms);
      checkInstant();
    }
    return true;
  }
  void runFor(time::Duration d) {
    runUntil([] { return false; }, d);
  }

  time::Duration D() const { return timings_.leaseDuration; }
  time::Duration R() const { return timings_.renewDeadline; }
  time::Duration P() const { return timings_.retryPeriod; }

  time::FakeClock clock_;
  Fake fake_{clock_};
  const ElectionTimings timings_ = fake_.timings();
  std::vector<std::int64_t> acquiredTokens_;  // every kAcquired's token, in order

 private:
  void onEvent(Member& m, const ElectorEvent& e) {
    m.events.push_back(e);
    if (e.kind == ElectorEvent::Kind::kStoreFailed) {
      m.problemsWhenFailed.push_back(m.candidacy->leadership().problem);
    }
    if (e.kind != ElectorEvent::Kind::kAcquired && e.kind != ElectorEvent::Kind::kRenewed) return;
    m.lastConfirmed = clock_.now();
    if (e.kind != ElectorEvent::Kind::kAcquired) return;
    ASSERT_TRUE(e.token.has_value()) << m.identity << " acquired without a token";
    if (!acquiredTokens_.empty()) {
      EXPECT_GT(*e.token, acquiredTokens_.back()) << m.identity << "'s new term";
    }
    acquiredTokens_.push_back(*e.token);
    for (const auto& other : members_) {
      if (other.get() != &m) {
        EXPECT_FALSE(other->leads())
            << m.identity << " acquired while " << other->identity << " still claims";
      }
    }
  }
  // What holds at every instant.
  void checkInstant() {
    int leaders = 0;
    for (const auto& m : members_) {
      const Leadership l = m->candidacy->leadership();
      if (!l.leader) continue;
      ++leaders;
      ASSERT_TRUE(l.validUntilMono.has_value()) << m->identity;
      ASSERT_TRUE(m->lastConfirmed.has_value()) << m->identity << " leads unconfirmed";
      EXPECT_LT(clock_.now(), *l.validUntilMono) << m->identity;
      EXPECT_LE(*l.validUntilMono, *m->lastConfirmed + R())
          << m->identity << "'s claim outlasts its last confirmation + R";
    }
    EXPECT_LE(leaders, 1) << "two candidates claim the lock at once";
  }

  std::vector<std::unique_ptr<Member>> members_;
};

TYPED_TEST_SUITE_P(CandidacyContract);

TYPED_TEST_P(CandidacyContract, ALoneCandidateLeadsWithAClaimThatEndsWithinR) {
  auto& a = this->join("a");
  a.candidacy->start();
  EXPECT_FALSE(a.leads()) << "not before the store confirmed";
  this->settle();
  ASSERT_TRUE(a.leads());
  const Leadership l = a.candidacy->leadership();
  EXPECT_EQ(l.holder, "a");
  EXPECT_TRUE(l.fencingToken.has_value());
  EXPECT_TRUE(a.saw(ElectorEvent::Kind::kAcquired));
  // It renews: still leading well past R.
  EXPECT_FALSE(this->runUntil([&] { return !a.leads(); }, 3 * this->D()));
  EXPECT_TRUE(a.saw(ElectorEvent::Kind::kRenewed));
}

TYPED_TEST_P(CandidacyContract, ACutOffLeaderStopsClaimingAtItsLastConfirmationPlusR) {
  auto& a = this->started("a");
  ASSERT_TRUE(a.leads());
  this->runFor(this->P() + 500ms);  // a renewal or two confirmed
  this->fake_.setReachable("a", false);
  const time::MonoTime deadline = *a.lastConfirmed + this->R();
  this->runUntil([&] { return this->clock_.now() + 10ms >= deadline; }, this->R());
  this->clock_.advance(deadline - this->clock_.now());
  EXPECT_FALSE(a.leads()) << "still claims at the last confirmation + R";
  EXPECT_EQ(*a.lastConfirmed + this->R(), deadline) << "a renewal was confirmed while cut off";
  EXPECT_TRUE(a.saw(ElectorEvent::Kind::kSteppedDown));
}

TYPED_TEST_P(CandidacyContract, APausedLeaderAnswersFalseTheInstantItWakes) {
  auto& a = this->started("a");
  ASSERT_TRUE(a.leads());
  // SIGSTOP for R: no timer runs, no renewal goes out; the answer is computed when asked.
  this->clock_.jump(this->R());
  EXPECT_FALSE(a.leads());
}

TYPED_TEST_P(CandidacyContract, FencingTokensOnlyGoUpFromTermToTerm) {
  auto& a = this->started("a");
  auto& b = this->started("b");
  ASSERT_TRUE(a.leads());
  a.candidacy->releaseFor(2 * this->D(), nullptr);
  ASSERT_TRUE(this->runUntil([&] { return b.leads(); }, this->D()));
  b.candidacy->stop(nullptr);
  ASSERT_TRUE(this->runUntil([&] { return a.leads(); }, 3 * this->D()));
  ASSERT_EQ(this->acquiredTokens_.size(), 3u);
  EXPECT_LT(this->acquiredTokens_[0], this->acquiredTokens_[1]);
  EXPECT_LT(this->acquiredTokens_[1], this->acquiredTokens_[2]);
  EXPECT_EQ(a.token(), this->acquiredTokens_[2]);
}

TYPED_TEST_P(CandidacyContract, AReleaseEndsTheClaimBeforeTheNextCanBegin) {
  auto& a = this->started("a");
  auto& b = this->started("b");
  ASSERT_TRUE(a.leads());
  EXPECT_FALSE(b.leads());
  EXPECT_EQ(b.candidacy->leadership().holder, "a");
  bool released = false;
  a.candidacy->stop([&] { released = true; });
  EXPECT_FALSE(a.leads()) << "stop() stops claiming at once";
  // The release lets b in: well before the lock would have expired.
  ASSERT_TRUE(this->runUntil([&] { return b.leads(); }, this->D() - 1s));
  EXPECT_TRUE(released);
  EXPECT_FALSE(a.leads());
  EXPECT_GT(b.token(), this->acquiredTokens_.front());
}

TYPED_TEST_P(CandidacyContract, HandOverLetsTheOtherCandidateLead) {
  auto& a = this->started("a");
  auto& b = this->started("b");
  ASSERT_TRUE(a.leads());
  if (this->fake_.requestHandover("b")) {
    this->settle();
    EXPECT_TRUE(a.saw(ElectorEvent::Kind::kHandoverRequested));
    EXPECT_TRUE(a.leads()) << "a request alone changes nobody's leadership";
  }
  bool handedOver = false;
  a.candidacy->handOver([&] { handedOver = true; });
  EXPECT_FALSE(a.leads()) << "handOver() stops claiming at once";
  ASSERT_TRUE(this->runUntil([&] { return b.leads(); }, this->D() - 1s));
  EXPECT_TRUE(handedOver);
  // And b keeps it: a does not take it back.
  EXPECT_FALSE(this->runUntil([&] { return !b.leads(); }, 3 * this->D()));
  EXPECT_FALSE(a.leads());
}

TYPED_TEST_P(CandidacyContract, AnIneligibleCandidateAcquiresOnlyOnceReconsidered) {
  auto& a = this->join("a");
  bool eligible = false;
  a.candidacy->setEligibility([&] { return eligible; });
  a.candidacy->start();
  EXPECT_FALSE(this->runUntil([&] { return a.leads(); }, 2 * this->D())) << "a free lock";
  eligible = true;
  a.candidacy->reconsider();
  EXPECT_TRUE(this->runUntil([&] { return a.leads(); }, this->P()));
}

TYPED_TEST_P(CandidacyContract, EligibilityDoesNotAffectHolding) {
  auto& a = this->join("a");
  bool eligible = true;
  a.candidacy->setEligibility([&] { return eligible; });
  a.candidacy->start();
  this->settle();
  ASSERT_TRUE(a.leads());
  eligible = false;
  a.candidacy->reconsider();
  EXPECT_FALSE(this->runUntil([&] { return !a.leads(); }, 3 * this->D()));
}

TYPED_TEST_P(CandidacyContract, ARefusedRequestIsAnEventAndAProblemNeverAnException) {
  auto& a = this->join("a");
  this->fake_.refuseFirstRequest("a");
  EXPECT_NO_THROW(a.candidacy->start());
  EXPECT_NO_THROW(this->settle());
  EXPECT_FALSE(a.leads());
  ASSERT_TRUE(a.saw(ElectorEvent::Kind::kStoreFailed));
  const auto failed = std::find_if(a.events.begin(), a.events.end(), [](const ElectorEvent& e) {
    return e.kind == ElectorEvent::Kind::kStoreFailed;
  });
  EXPECT_FALSE(failed->detail.empty()) << "which request and why";
  // Where the app and the operator look (/leader, the status file), as the event is told.
  ASSERT_FALSE(a.problemsWhenFailed.empty());
  EXPECT_FALSE(a.problemsWhenFailed.front().empty());
  // Answered again: it leads, and the problem is gone.
  ASSERT_TRUE(this->runUntil([&] { return a.leads(); }, 2 * this->D()));
  EXPECT_EQ(a.candidacy->leadership().problem, "");
}

REGISTER_TYPED_TEST_SUITE_P(CandidacyContract, ALoneCandidateLeadsWithAClaimThatEndsWithinR,
                            ACutOffLeaderStopsClaimingAtItsLastConfirmationPlusR,
                            APausedLeaderAnswersFalseTheInstantItWakes,
                            FencingTokensOnlyGoUpFromTermToTerm,
                            AReleaseEndsTheClaimBeforeTheNextCanBegin,
                            HandOverLetsTheOtherCandidateLead,
                            AnIneligibleCandidateAcquiresOnlyOnceReconsidered,
                            EligibilityDoesNotAffectHolding,
                            ARefusedRequestIsAnEventAndAProblemNeverAnException);

}  // namespace leasehold::election::contract

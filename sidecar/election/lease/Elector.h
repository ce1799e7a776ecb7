#pragma once
// The leader-election algorithm of design.md section 2, with no I/O of its own: the Lease is
// reached through LeaseStore and time through Clock, so every race replays in a unit test.
//
// Safety rests on three rules:
//  - leadership is computed when asked: leader iff the last write this process got confirmed
//    names it as holder and now < (when that write was *sent*) + R;
//  - others take over only at (when *they* observed the last change) + D, on their own clock,
//    or (--fast-failover, setExitWitness) on a witness's proof that the holder's process of
//    that very record has exited: a process that is gone claims nothing;
//  - every write is a compare-and-swap on resourceVersion.
// Since the write was sent before anyone could observe it, and R < D, terms never overlap.
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "election/Candidacy.h"
#include "election/ElectionTimings.h"
#include "election/Leadership.h"
#include "election/lease/HolderExitWitness.h"
#include "election/lease/LeaseStore.h"
#include "time/Clock.h"

namespace leasehold::election {

enum class FollowerMode {
  kWatch,  // follow change notifications and wake at the instant the lease can expire
  kPoll,   // client-go's behaviour: GET every P with jitter, no watch, no expiry timer
};

struct ElectorConfig {
  Identity identity;
  ElectionTimings timings;
  FollowerMode followerMode = FollowerMode::kWatch;
  // --coordinated: the API server's coordinated-leader-election controller names the holder
  // (docs/design.md section 2). This replica never creates, takes over or takes a released Lease
  // on its own; it renews only a term it holds, and when the controller names it (holder = us,
  // acquireTime unset) its first write starts the term: acquireTime, leaseTransitions + 1, and
  // leadership only once that write is confirmed. A released Lease whose preferredHolder names
  // it is taken at once (the controller's decision, or an operator's request).
  bool coordinated = false;
};

// The Candidacy on a compare-and-swap record (a Kubernetes Lease; MemoryLeaseStore in tests).
class Elector : public Candidacy, private LeaseObserver {
 public:
  // random01 returns uniform values in [0, 1) for jitter; injected for reproducible tests.
  // Throws std::invalid_argument (ElectionTimings::validate's message) for impossible timings
  // or an empty identity.
  Elector(time::Clock& clock, LeaseStore& store, ElectorConfig config,
          std::function<double()> random01);
  ~Elector() override;
  Elector(const Elector&) = delete;
  Elector& operator=(const Elector&) = delete;

  void start() override;
  // Stops claiming at once, releases the lease if this process holds it, and stops competing.
  // done runs when the release is confirmed or there was nothing to release or it failed.
  void stop(std::function<void()> done) override;
  // Like stop(), but competes again once cooldown has passed.
  void releaseFor(time::Duration cooldown, std::function<void()> done) override;
  // The answer to kHandoverRequested, once whatever acts for the leader has stopped: stops
  // claiming at once and releases; the Lease then waits D for the replica it names (others
  // leave a released Lease with a request to it for D), and this replica competes as usual.
  void handOver(std::function<void()> done) override;

  Leadership leadership() const override;
  bool isLeader() const { return leadership().leader; }
  // How long since the last confirmed write of a record that still names this process as
  // holder; nullopt when the lease is not ours. The health probe's input: a holder that cannot
  // renew blocks everybody until the lease expires.
  std::optional<time::Duration> holdingWithoutRenewalFor() const override;
  void setEventHandler(std::function<void(const ElectorEvent&)> handler) override {
    handler_ = std::move(handler);
  }
  const ElectorConfig& config() const { return config_; }
  // Another name this replica answers to in a handover request (its pod name).
  void setAlias(std::string alias) override { alias_ = std::move(alias); }
  // Shard mode: a shard's Elector acquires (creates the Lease, takes a released or expired one,
  // restarts a lapsed term of its own) only while `eligible` says yes; renewing a term it holds
  // and releasing are not affected. Unset: always eligible. Call reconsider() when the answer
  // may have turned to yes: a refused acquisition leaves no timer behind.
  void setEligibility(std::function<bool()> eligible) override { eligible_ = std::move(eligible); }
  void reconsider() override;
  // --fast-failover: while another holder's record is observed, `witness` follows it, and a
  // proof that its process exited lets this replica take over at once (a compare-and-swap on
  // that record, a new term) instead of at observation + D. Set before start(); must outlive
  // the Elector. Not used in coordinated mode (the controller names the holder).
  void setExitWitness(HolderExitWitness* witness) { witness_ = witness; }

 private:
  struct SentWrite {
    LeaseRecord record;  // as sent (resourceVersion = the one it was conditional on)
    time::MonoTime sentAt;
    bool acquisition;
  };
  struct OwnTerm {
    LeaseRecord record;     // as confirmed by the store
    time::MonoTime sentAt;  // when the write that produced it was sent
  };

  void onLeaseObserved(const std::optional<LeaseRecord>& record) override;
  void onWatchStateChanged(bool healthy) override;

  void step();
  void observe(const std::optional<LeaseRecord>& record);
  void send(std::function<void(StoreCallback)> request, std::function<void(StoreResult)> then);
  void sendGet();
  void sendCreate();
  void sendWrite(bool acquisition);
  void onWriteResult(const SentWrite& sent, StoreResult result);
  void confirm(const LeaseRecord& record, time::MonoTime sentAt, bool acquisition,
               time::Duration latency);
  void backOff(const StoreResult& result);
  // Keeps problems_ (per request kind: a refusal stays until that kind is answered) and tells
  // the handler when the problem shown in leadership() changes.
  void noteRefusal(const char* request, const StoreResult& result);
  void beginRelease(std::function<void()> done);
  void sendRelease(int attemptsLeft);
  void finishRelease();
  void onDeadline();
  void stepCoordinated(time::MonoTime now);
  // Asks the witness about the observed record's holder, or stops asking.
  void followHolder();

  bool leaderAt(time::MonoTime now) const;
  bool isOwnRecord(const LeaseRecord& r) const;
  // The request names this replica (identity or alias).
  bool preferredIsMe(const LeaseRecord& r) const;
  time::Duration holderDuration(const LeaseRecord& r) const;
  time::Duration pollInterval();
  void emit(ElectorEvent::Kind kind, std::string detail, time::Duration latency = {},
            bool voluntary = false);
  void noteLeadershipChange(std::string detail, bool voluntary = false);
  // An acquisition's detail, with the witness's proof when it was the reason (said once).
  std::string withProof(std::string detail);

  time::Clock& clock_;
  LeaseStore& store_;
  ElectorConfig config_;
  std::function<double()> random01_;
  std::function<void(const ElectorEvent&)> handler_;
  std::function<bool()> eligible_;  // shard mode (setEligibility)
  HolderExitWitness* witness_ = nullptr;
  // The resourceVersion of the record whose holder the witness proved gone, and the proof.
  ResourceVersion exitProvenFor_;
  std::string exitProof_;
  std::unique_ptr<time::Timer> wakeTimer_;
  std::unique_ptr<time::Timer> deadlineTimer_;
  std::unique_ptr<time::Timer> releaseTimer_;  // a release asked for from inside a handler
  // Guards callbacks that may arrive after destruction.
  std::shared_ptr<char> alive_ = std::make_shared<char>();

  bool started_ = false;
  bool stopped_ = false;    // stop(): no more competing
  bool releasing_ = false;  // a release is pending or in flight: never claim
  bool inflight_ = false;
  bool emitting_ = false;                        // inside handler_
  std::map<std::string, std::string> problems_;  // request kind -> why it is refused
  std::string shownProblem_;                     // the one leadership() shows
  bool watchHealthy_ = false;
  std::function<void()> releaseDone_;

  bool observedKnown_ = false;  // have we read the lease at least once
  std::optional<LeaseRecord> observed_;
  time::MonoTime observedAt_{};
  std::optional<OwnTerm> own_;
  // The last write of ours the store confirmed, kept when own_ is dropped (a 409): a record read
  // later with the same spec is still that term (only its metadata changed).
  std::optional<OwnTerm> lastOwn_;
  // Writes whose outcome is not known yet (in flight, or answered with a transient error: the
  // store may have applied them). A record read back that matches one is ours, confirmed as of
  // that write's send time, which is still a safe start for the deadline.
  std::deque<SentWrite> unconfirmed_;
  time::MonoTime retryNotBefore_{};
  time::MonoTime nextPollAt_{};
  std::optional<time::MonoTime> cooldownUntil_;
  std::string lastHolder_;
  std::string alias_;
  std::string announcedHandover_;  // the request kHandoverRequested was emitted for
  bool lastLeader_ = false;
  // Coordinated mode: when the last term of another holder we saw can end, on our clock (its
  // record's observation + its duration); reset by a released record. A controller's decision
  // is taken on the server's clock against the holder's wall-clock renewTime: this keeps a
  // takeover after a crash on our own clock, as the uncoordinated rule does.
  std::optional<time::MonoTime> otherTermEndsAt_;
};

}  // namespace leasehold::election

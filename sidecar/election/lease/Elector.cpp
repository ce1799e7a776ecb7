// The Elector's algorithm (contract in Elector.h). Why one file of ~600 lines: acquire, renew,
// step down, observe, release, the lost-answer bookkeeping and --fast-failover's proof (a
// takeover before the expiry) all share the same few fields (the last confirmed write, the
// writes in flight, the observation time); split, each piece would need the others'
// invariants restated, and the safety argument reads best in one place.
#include "election/lease/Elector.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "election/ClaimRule.h"

namespace leasehold::election {

namespace {
constexpr std::size_t kMaxUnconfirmed = 8;

// Like client-go's NewLeaderElector: an elector with impossible timings or no identity is never
// built. The configuration layer reports these to the user first; this is the last line.
ElectorConfig checked(ElectorConfig config) {
  if (auto problem = config.timings.validate()) throw std::invalid_argument(*problem);
  if (config.identity.value.empty()) throw std::invalid_argument("the identity must not be empty");
  return config;
}
}  // namespace

Elector::Elector(time::Clock& clock, LeaseStore& store, ElectorConfig config,
                 std::function<double()> random01)
    : clock_(clock),
      store_(store),
      config_(checked(std::move(config))),
      random01_(std::move(random01)),
      wakeTimer_(clock.makeTimer([this] { step(); })),
      deadlineTimer_(clock.makeTimer([this] { onDeadline(); })),
      releaseTimer_(clock.makeTimer([this] {
        if (releasing_ && !inflight_) sendRelease(2);
      })) {}

Elector::~Elector() {
  if (started_ && config_.followerMode == FollowerMode::kWatch) store_.watch(nullptr);
  if (witness_) witness_->unfollow();
}

void Elector::start() {
  if (started_) return;
  started_ = true;
  if (config_.followerMode == FollowerMode::kWatch) store_.watch(this);
  step();
}

void Elector::stop(std::function<void()> done) {
  if (stopped_ && !releasing_) {
    if (done) done();
    return;
  }
  stopped_ = true;
  cooldownUntil_.reset();
  beginRelease(std::move(done));
}

void Elector::releaseFor(time::Duration cooldown, std::function<void()> done) {
  if (stopped_) {
    if (done) done();
    return;
  }
  cooldownUntil_ = clock_.now() + cooldown;
  beginRelease(std::move(done));
}

void Elector::reconsider() {
  if (!releasing_) step();
}

void Elector::handOver(std::function<void()> done) {
  if (stopped_ || !leaderAt(clock_.now())) {
    if (done) done();
    return;
  }
  beginRelease(std::move(done));
}

bool Elector::preferredIsMe(const LeaseRecord& r) const {
  return !r.preferredHolder.empty() && (r.preferredHolder == config_.identity.value ||
                                        (!alias_.empty() && r.preferredHolder == alias_));
}

bool Elector::isOwnRecord(const LeaseRecord& r) const {
  return own_ && own_->record.resourceVersion == r.resourceVersion && r.heldBy(config_.identity);
}

bool Elector::leaderAt(time::MonoTime now) const {
  return started_ && !stopped_ && !releasing_ && own_ && observed_ && isOwnRecord(*observed_) &&
         now < claimEndsAt(own_->sentAt, config_.timings);
}

time::Duration Elector::holderDuration(const LeaseRecord& r) const {
  if (r.leaseDurationSeconds && *r.leaseDurationSeconds > 0) {
    return std::chrono::seconds(*r.leaseDurationSeconds);
  }
  return config_.timings.leaseDuration;
}

time::Duration Elector::pollInterval() {
  const auto p = config_.timings.retryPeriod;
  const double extra = random01_() * config_.timings.jitter * static_cast<double>(p.count());
  return p + time::Duration(static_cast<time::Duration::rep>(extra));
}

std::optional<time::Duration> Elector::holdingWithoutRenewalFor() const {
  if (!own_ || !observed_ || !isOwnRecord(*observed_) || stopped_) return std::nullopt;
  return clock_.now() - own_->sentAt;
}

Leadership Elector::leadership() const {
  const time::MonoTime now = clock_.now();
  Leadership l;
  l.identity = config_.identity.value;
  if (observed_) {
    l.holder = observed_->holderIdentity;
    l.holderPod = observed_->holderPod;
    l.holderAddress = observed_->holderAddress;
    l.fencingToken = observed_->leaseTransitions;
    l.acquireTime = observed_->acquireTime;
    l.renewTime = observed_->renewTime;
  }
  l.problem = shownProblem_;
  if (leaderAt(now)) {
    describeClaim(l, own_->record.leaseTransitions, claimEndsAt(own_->sentAt, config_.timings), now,
                  clock_);
  }
  return l;
}

void Elector::emit(ElectorEvent::Kind kind, std::string detail, time::Duration latency,
                   bool voluntary) {
  if (!handler_) return;
  ElectorEvent e{kind, observed_ ? observed_->holderIdentity : std::string(), std::nullopt,
                 std::move(detail), latency};
  e.voluntary = voluntary;
  if (own_ && (kind == ElectorEvent::Kind::kAcquired || kind == ElectorEvent::Kind::kRenewed)) {
    e.token = own_->record.leaseTransitions;
  } else if (observed_) {
    e.token = observed_->leaseTransitions;
  }
  // A handler may answer by calling back (handOver on kHandoverRequested): see beginRelease.
  emitting_ = true;
  handler_(e);
  emitting_ = false;
}

void Elector::noteLeadershipChange(std::string detail, bool voluntary) {
  const bool leader = leaderAt(clock_.now());
  if (leader == lastLeader_) return;
  lastLeader_ = leader;
  if (leader) detail = withProof(std::move(detail));
  emit(leader ? ElectorEvent::Kind::kAcquired : ElectorEvent::Kind::kSteppedDown, std::move(detail),
       {}, voluntary && !leader);
}

std::string Elector::withProof(std::string detail) {
  if (exitProof_.empty()) return detail;
  return std::move(detail) + " before the lease expired: " + std::exchange(exitProof_, {});
}

// ---- observations ------------------------------------------------------------------------

void Elector::onLeaseObserved(const std::optional<LeaseRecord>& record) {
  observe(record);
  if (!releasing_) step();
}

void Elector::onWatchStateChanged(bool healthy) {
  watchHealthy_ = healthy;
  // Notifications may have been missed while the watch was down: read again soon.
  if (!healthy) nextPollAt_ = clock_.now();
  if (!releasing_) step();
}

void Elector::observe(const std::optional<LeaseRecord>& record) {
  const time::MonoTime now = clock_.now();
  if (!record) {
    if (observedKnown_ && !observed_) return;
    observedKnown_ = true;
    observed_.reset();
    observedAt_ = now;
    own_.reset();
    deadlineTimer_->disarm();
    followHolder();
    noteLeadershipChange("the Lease was deleted");
    return;
  }
  if (observedKnown_ && observed_ && observed_->resourceVersion == record->resourceVersion) {
    return;  // nothing moved: observedAt_ must not be reset
  }
  observedKnown_ = true;
  observed_ = record;
  observedAt_ = now;
  if (config_.coordinated) {
    if (record->holderIdentity.empty()) {
      otherTermEndsAt_.reset();  // released: that holder stopped claiming before writing it
    } else if (!record->heldBy(config_.identity)) {
      otherTermEndsAt_ = now + holderDuration(*record);
    }
  }

  if (!isOwnRecord(*record) && lastOwn_ && record->heldBy(config_.identity) &&
      lastOwn_->record.sameSpec(*record)) {
    // Our last confirmed write with only its metadata changed (kubectl annotate or label, a
    // handover request): nobody else wrote the spec, so it is still our term and its deadline
    // still counts from our write. Also after a 409 that such a change caused.
    own_ = OwnTerm{*record, lastOwn_->sentAt};
    lastOwn_ = own_;
    deadlineTimer_->armAt(claimEndsAt(own_->sentAt, config_.timings));
  } else if (!isOwnRecord(*record)) {
    // Is it a write of ours whose answer we have not seen (in flight, or lost)? The earliest
    // matching send time is the conservative start of its deadline.
    auto match = unconfirmed_.end();
    if (record->heldBy(config_.identity)) {
      for (auto it = unconfirmed_.begin(); it != unconfirmed_.end(); ++it) {
        if (it->record.sameSpec(*record)) {
          match = it;
          break;
        }
      }
    }
    if (match != unconfirmed_.end()) {
      own_ = OwnTerm{*record, match->sentAt};
      lastOwn_ = own_;
      unconfirmed_.erase(unconfirmed_.begin(), match + 1);
      deadlineTimer_->armAt(claimEndsAt(own_->sentAt, config_.timings));
    } else {
      own_.reset();
      deadlineTimer_->disarm();
    }
  }

  followHolder();
  if (record->holderIdentity != lastHolder_) {
    lastHolder_ = record->holderIdentity;
    if (!record->heldBy(config_.identity) || !isOwnRecord(*record)) {
      emit(ElectorEvent::Kind::kNewLeaderObserved, record->holderIdentity.empty()
                                                       ? "the lease was released"
                                                       : "lease held by " + record->holderIdentity);
    }
  } else {
    emit(ElectorEvent::Kind::kObserved, "resourceVersion " + record->resourceVersion.value);
  }
  noteLeadershipChange(record->holderIdentity.empty()
                           ? "the lease was released"
                           : "the lease is held by " + record->holderIdentity);
  if (record->preferredHolder.empty()) {
    announcedHandover_.clear();
  } else if (lastLeader_ && !preferredIsMe(*record) &&
             announcedHandover_ != record->preferredHolder) {
    announcedHandover_ = record->preferredHolder;
    emit(ElectorEvent::Kind::kHandoverRequested,
         "handover requested to " + record->preferredHolder);
  }
}

void Elector::followHolder() {
  if (!witness_ || config_.coordinated) return;
  const bool other = started_ && !stopped_ && observed_ && !observed_->holderIdentity.empty() &&
                     !isOwnRecord(*observed_);
  if (!other) {
    // exitProof_ stays for the acquisition's event (withProof), which may come later.
    exitProvenFor_ = {};
    return witness_->unfollow();
  }
  if (exitProvenFor_ == observed_->resourceVersion) return;  // proven already: no need to ask
  exitProvenFor_ = {};
  exitProof_.clear();
  std::weak_ptr<char> alive = alive_;
  witness_->follow(*observed_, [this, alive, rv = observed_->resourceVersion](std::string proof) {
    if (alive.expired() || !observed_ || observed_->resourceVersion != rv) return;
    exitProvenFor_ = rv;
    exitProof_ = std::move(proof);
    emit(ElectorEvent::Kind::kObserved, exitProof_);
    if (!releasing_) step();
  });
}

// ---- the loop ----------------------------------------------------------------------------

void Elector::step() {
  if (!started_ || stopped_ || releasing_ || inflight_) return;
  const time::MonoTime now = clock_.now();
  if (cooldownUntil_) {
    if (now < *cooldownUntil_) {
      wakeTimer_->armAt(*cooldownUntil_);
      return;
    }
    cooldownUntil_.reset();
    observedKnown_ = false;
  }
  if (now < retryNotBefore_) {
    wakeTimer_->armAt(retryNotBefore_);
    return;
  }
  if (!observedKnown_) return sendGet();
  if (!observed_ && !config_.coordinated) return sendCreate();

  if (leaderAt(now)) {
    // I after the last confirmed renewal; after a failure backOff() spaced the retries by P.
    const time::MonoTime due = own_->sentAt + config_.timings.renewEvery();
    if (now < due) {
      wakeTimer_->armAt(due);
      return;
    }
    return sendWrite(false);
  }
  if (config_.coordinated) return stepCoordinated(now);
  const LeaseRecord& rec = *observed_;
  // A handover request for somebody else: a released Lease is left to it for D (it may be
  // gone), and so is a record of ours whose deadline passed.
  const bool leftToOther = !rec.preferredHolder.empty() && !preferredIsMe(rec) &&
                           (rec.holderIdentity.empty() || isOwnRecord(rec));
  // Our own record whose deadline passed (we stepped down), or a released lease: CAS at once.
  if (!leftToOther && (isOwnRecord(rec) || rec.holderIdentity.empty())) return sendWrite(true);

  // Another holder, possibly our identity written by an earlier process. Its process has
  // exited (the witness's proof about this very record): nobody claims it any more.
  if (!exitProvenFor_.empty() && exitProvenFor_ == rec.resourceVersion) return sendWrite(true);
  const time::MonoTime expiry =
      observedAt_ + (leftToOther ? config_.timings.leaseDuration : holderDuration(rec));
  if (now >= expiry) return sendWrite(true);
  const bool polling = config_.followerMode == FollowerMode::kPoll || !watchHealthy_;
  if (!polling) {
    wakeTimer_->armAt(expiry);
    return;
  }
  if (now >= nextPollAt_) return sendGet();
  time::MonoTime wake = nextPollAt_;
  if (config_.followerMode == FollowerMode::kWatch) wake = std::min(wake, expiry);
  wakeTimer_->armAt(wake);
}

// Coordinated mode: wait for the controller's decision instead of competing (ElectorConfig).
void Elector::stepCoordinated(time::MonoTime now) {
  std::optional<time::MonoTime> takeAt;
  if (observed_) {
    const LeaseRecord& rec = *observed_;
    if (isOwnRecord(rec)) return sendWrite(true);  // our lapsed term: the holder is still us
    if (rec.heldBy(config_.identity) && rec.acquireTime) {
      // An earlier process of ours (same identity). The controller keeps a holder it would pick
      // anyway, so nobody else will end that term: take it once it has expired on our clock.
      takeAt = observedAt_ + holderDuration(rec);
    } else if (rec.heldBy(config_.identity) || (rec.holderIdentity.empty() && preferredIsMe(rec))) {
      // Named by the controller (it never sets acquireTime) or handed to us: the first write
      // starts the term (the token goes up), once the last other term we saw has ended.
      takeAt = otherTermEndsAt_.value_or(now);
    }
  }
  if (takeAt && now >= *takeAt) return sendWrite(true);
  const bool polling = config_.followerMode == FollowerMode::kPoll || !watchHealthy_;
  if (polling && now >= nextPollAt_) return sendGet();
  if (polling && (!takeAt || nextPollAt_ < *takeAt)) takeAt = nextPollAt_;
  if (takeAt) wakeTimer_->armAt(*takeAt);
}

void Elector::send(std::function<void(StoreCallback)> request,
                   std::function<void(StoreResult)> then) {
  inflight_ = true;
  std::weak_ptr<char> alive = alive_;
  request([this, alive, then = std::move(then)](StoreResult r) {
    if (alive.expired()) return;
    inflight_ = false;
    then(std::move(r));
  });
}

void Elector::sendGet() {
  send([this](StoreCallback cb) { store_.get(std::move(cb)); },
       [this](StoreResult r) {
         switch (r.status) {
           case StoreStatus::kOk:
             observe(r.record);
             break;
           case StoreStatus::kNotFound:
             observe(std::nullopt);
             break;
           default:
             backOff(r);
             break;
         }
         noteRefusal("read", r);
         nextPollAt_ = clock_.now() + pollInterval();
         noteLeadershipChange("read the lease");
         if (releasing_) return sendRelease(1);
         step();
       });
}

void Elector::sendCreate() {
  if (eligible_ && !eligible_()) return;  // shard mode: not ours to take (reconsider())
  const time::WallTime wall = clock_.wallNow();
  LeaseRecord rec;
  rec.holderIdentity = config_.identity.value;
  rec.leaseDurationSeconds = static_cast<std::int32_t>(
      std::chrono::duration_cast<std::chrono::seconds>(config_.timings.leaseDuration).count());
  rec.acquireTime = wall;
  rec.renewTime = wall;
  rec.leaseTransitions = 0;
  SentWrite sent{rec, clock_.now(), true};
  unconfirmed_.push_back(sent);
  if (unconfirmed_.size() > kMaxUnconfirmed) unconfirmed_.pop_front();
  send([this, rec](StoreCallback cb) { store_.create(rec, std::move(cb)); },
       [this, sent](StoreResult r) { onWriteResult(sent, std::move(r)); });
}

void Elector::sendWrite(bool acquisition) {
  if (acquisition && eligible_ && !eligible_()) return;  // shard mode (reconsider())
  const time::WallTime wall = clock_.wallNow();
  LeaseRecord rec = *observed_;  // keeps resourceVersion (the CAS condition) and the opaque rest
  rec.holderIdentity = config_.identity.value;
  rec.leaseDurationSeconds = static_cast<std::int32_t>(
      std::chrono::duration_cast<std::chrono::seconds>(config_.timings.leaseDuration).count());
  rec.renewTime = wall;
  if (acquisition) {
    rec.acquireTime = wall;
    rec.leaseTransitions = observed_->leaseTransitions + 1;
  }
  // The new holder removes the handover request (whoever it named: after D it has expired), and
  // so does a leader that the request names.
  if (acquisition || preferredIsMe(rec)) rec.preferredHolder.clear();
  SentWrite sent{rec, clock_.now(), acquisition};
  unconfirmed_.push_back(sent);
  if (unconfirmed_.size() > kMaxUnconfirmed) unconfirmed_.pop_front();
  send([this, rec](StoreCallback cb) { store_.update(rec, std::move(cb)); },
       [this, sent](StoreResult r) { onWriteResult(sent, std::move(r)); });
}

void Elector::onWriteResult(const SentWrite& sent, StoreResult r) {
  const time::MonoTime now = clock_.now();
  const bool wasLeader = lastLeader_;
  auto forget = [&] {
    auto it = std::find_if(unconfirmed_.begin(), unconfirmed_.end(), [&](const SentWrite& w) {
      return w.sentAt == sent.sentAt && w.record.sameSpec(sent.record);
    });
    if (it != unconfirmed_.end()) unconfirmed_.erase(it);
  };
  const char* what = sent.acquisition ? "acquisition" : "renewal";
  switch (r.status) {
    case StoreStatus::kOk:
      forget();
      confirm(*r.record, sent.sentAt, sent.acquisition, now - sent.sentAt);
      break;
    case StoreStatus::kConflict:
    case StoreStatus::kAlreadyExists:
      // Somebody else moved (or a lost write of ours landed): claim nothing until re-read.
      forget();
      own_.reset();
      deadlineTimer_->disarm();
      observedKnown_ = false;
      exitProof_.clear();  // a takeover on proof that lost the race: whatever comes next is not it
      if (wasLeader) emit(ElectorEvent::Kind::kRenewFailed, std::string(what) + ": conflict");
      noteLeadershipChange(std::string(what) + " conflicted: the lease moved");
      break;
    case StoreStatus::kNotFound:
      forget();
      observe(std::nullopt);
      break;
    case StoreStatus::kTransient:
      // Maybe applied: keep it in unconfirmed_ so a later read can recognise it.
      if (wasLeader) emit(ElectorEvent::Kind::kRenewFailed, std::string(what) + ": " + r.message);
      backOff(r);
      break;
    case StoreStatus::kFatal:
      forget();
      if (wasLeader) emit(ElectorEvent::Kind::kRenewFailed, std::string(what) + ": " + r.message);
      backOff(r);
      break;
  }
  noteRefusal("write", r);
  if (releasing_) return sendRelease(2);
  step();
}

void Elector::noteRefusal(const char* request, const StoreResult& r) {
  if (r.status == StoreStatus::kFatal) {
    problems_[request] = r.message;
  } else if (r.status != StoreStatus::kTransient) {
    problems_.erase(request);  // answered: whatever refused it was fixed
  }
  // A read refusal first ("read" < "write"): a replica that cannot read cannot get to writing.
  std::string shown = problems_.empty() ? std::string() : problems_.begin()->second;
  if (shown == shownProblem_) return;
  shownProblem_ = std::move(shown);
  if (shownProblem_.empty()) {
    emit(ElectorEvent::Kind::kObserved, "the store answers this replica's requests again");
  } else {
    emit(ElectorEvent::Kind::kStoreFailed, shownProblem_);
  }
}

void Elector::confirm(const LeaseRecord& record, time::MonoTime sentAt, bool acquisition,
                      time::Duration latency) {
  const time::MonoTime now = clock_.now();
  const bool wasLeader = lastLeader_;
  if (!observed_ || observed_->resourceVersion != record.resourceVersion) observedAt_ = now;
  observedKnown_ = true;
  observed_ = record;
  own_ = OwnTerm{record, sentAt};
  lastOwn_ = own_;
  lastHolder_ = record.holderIdentity;
  // Entries sent before this one can no longer land: their CAS condition is gone.
  while (!unconfirmed_.empty() && unconfirmed_.front().sentAt <= sentAt)
    unconfirmed_.pop_front();
  deadlineTimer_->armAt(claimEndsAt(sentAt, config_.timings));
  const bool leader = leaderAt(now);
  followHolder();  // our record now: nobody else's process to ask about
  if (leader && !wasLeader) {
    lastLeader_ = true;
    std::string detail = acquisition ? withProof("acquired the lease")
                                     : std::string("renewal confirmed after a gap");
    emit(ElectorEvent::Kind::kAcquired, std::move(detail), latency);
  } else if (leader) {
    emit(ElectorEvent::Kind::kRenewed, "renewed", latency);
  } else {
    noteLeadershipChange("write confirmed after its renew deadline");
  }
}

void Elector::backOff(const StoreResult& r) {
  time::Duration wait = r.retryAfter ? *r.retryAfter : config_.timings.retryPeriod;
  // A leader keeps trying every P however long the server asks it to wait: honouring a
  // Retry-After of R or more would make a healthy leader step down.
  if (lastLeader_) wait = std::min(wait, config_.timings.retryPeriod);
  retryNotBefore_ = clock_.now() + wait;
}

void Elector::onDeadline() {
  noteLeadershipChange("renew deadline (" + time::formatDuration(config_.timings.renewDeadline) +
                       ") passed without a confirmed renewal");
  step();
}

// ---- release -----------------------------------------------------------------------------

void Elector::beginRelease(std::function<void()> done) {
  const bool already = releasing_;
  releasing_ = true;
  if (done) {
    auto previous = std::move(releaseDone_);
    releaseDone_ = [previous = std::move(previous), done = std::move(done)] {
      if (previous) previous();
      done();
    };
  }
  wakeTimer_->disarm();
  // Stop claiming first: whoever asks from now on hears leader=false.
  noteLeadershipChange("releasing the lease", /*voluntary=*/true);
  if (already || inflight_) return;  // the in-flight request's handler continues the release
  // Called from an event handler: the code that emitted may be an answer's handler that goes
  // on to send; the release goes out right after it instead (never two requests at once).
  if (emitting_) return releaseTimer_->armAt(clock_.now());
  sendRelease(2);
}

void Elector::sendRelease(int attemptsLeft) {
  const bool ours = own_ && observed_ && isOwnRecord(*observed_);
  if (!ours) {
    // A write of ours may have landed unseen, or a 409 (a metadata-only edit racing a renewal)
    // dropped a term that is still ours: read once before concluding there is nothing.
    if ((!unconfirmed_.empty() || lastOwn_) && attemptsLeft > 0) {
      observedKnown_ = false;
      return send([this](StoreCallback cb) { store_.get(std::move(cb)); },
                  [this, attemptsLeft](StoreResult r) {
                    if (r.status == StoreStatus::kOk) observe(r.record);
                    if (r.status == StoreStatus::kNotFound) observe(std::nullopt);
                    unconfirmed_.clear();
                    sendRelease(attemptsLeft - 1);
                  });
    }
    return finishRelease();
  }
  const time::WallTime wall = clock_.wallNow();
  LeaseRecord rec = *observed_;
  rec.holderIdentity.clear();
  rec.leaseDurationSeconds = 1;
  rec.acquireTime = wall;
  rec.renewTime = wall;
  send([this, rec](StoreCallback cb) { store_.update(rec, std::move(cb)); },
       [this, attemptsLeft](StoreResult r) {
         if (r.status == StoreStatus::kOk) {
           own_.reset();
           deadlineTimer_->disarm();
           observe(r.record);
           emit(ElectorEvent::Kind::kReleased, "released the lease");
           return finishRelease();
         }
         if (r.status == StoreStatus::kConflict && attemptsLeft > 1) {
           return send([this](StoreCallback cb) { store_.get(std::move(cb)); },
                       [this, attemptsLeft](StoreResult g) {
                         if (g.status == StoreStatus::kOk) observe(g.record);
                         sendRelease(attemptsLeft - 1);
                       });
         }
         finishRelease();
       });
}

void Elector::finishRelease() {
  releasing_ = false;
  unconfirmed_.clear();
  own_.reset();
  lastOwn_.reset();
  deadlineTimer_->disarm();
  auto done = std::move(releaseDone_);
  releaseDone_ = nullptr;
  if (stopped_) {
    if (config_.followerMode == FollowerMode::kWatch) store_.watch(nullptr);
    if (witness_) witness_->unfollow();
  } else {
    step();
  }
  if (done) done();
}

}  // namespace leasehold::election

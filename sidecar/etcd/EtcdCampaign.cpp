// The etcd campaign (contract in EtcdCampaign.h). Why one file of ~500 lines: the lease, the
// queue key, the view of the queue and the release share the same few fields (the lease and
// the send time of its last confirmed keep-alive, our key, whether it is the lowest), and the
// claim rule reads best next to every place that changes them.
#include "etcd/EtcdCampaign.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "election/ClaimRule.h"

namespace leasehold::etcd {

using election::ElectorEvent;

namespace {

std::string hex(LeaseId id) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%" PRIx64, static_cast<std::uint64_t>(id));
  return buffer;
}

}  // namespace

EtcdCampaign::EtcdCampaign(time::Clock& clock, EtcdTransport& etcd, EtcdCampaignConfig config)
    : clock_(clock), etcd_(etcd), config_(std::move(config)), prefix_(config_.election + "/") {
  if (auto problem = config_.timings.validate()) throw std::invalid_argument(*problem);
  if (config_.identity.empty()) throw std::invalid_argument("the identity is empty");
  if (config_.election.empty()) throw std::invalid_argument("the election name is empty");
  keepAliveTimer_ = clock_.makeTimer([this] { keepAlive(); });
  deadlineTimer_ = clock_.makeTimer([this] { onDeadline(); });
  retryTimer_ = clock_.makeTimer([this] {
    if (!lease_) return grant();
    if (!own_) join();
    refresh();
  });
  cooldownTimer_ = clock_.makeTimer([this] { grant(); });
}

EtcdCampaign::~EtcdCampaign() {
  if (watch_) watch_->cancel();
}

std::optional<std::string> EtcdCampaign::key() const {
  if (!own_) return std::nullopt;
  return own_->key;
}

// ---- requests ------------------------------------------------------------------------------

void EtcdCampaign::call(std::string method, std::string body, bool idempotent,
                        std::function<void(EtcdReply)> then) {
  EtcdCall c;
  c.method = std::move(method);
  c.body = std::move(body);
  c.idempotent = idempotent;
  // An answer later than R cannot support a claim any more.
  c.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(config_.timings.renewDeadline);
  std::weak_ptr<char> alive = alive_;
  etcd_.call(std::move(c), [this, alive, then = std::move(then)](EtcdReply reply) {
    if (alive.expired()) return;
    if (reply.ok()) {
      lastTrouble_.clear();
      if (!refusal_.empty()) {
        refusal_.clear();
        emit(ElectorEvent::Kind::kObserved, "etcd answers this candidate's requests again");
      }
    }
    then(std::move(reply));
  });
}

void EtcdCampaign::trouble(const std::string& what, const EtcdReply& reply) {
  std::string message = what + ": " + reply.message;
  if (message == lastTrouble_) return;
  lastTrouble_ = message;
  const bool refused =
      reply.kind == EtcdReply::Kind::kDenied || reply.kind == EtcdReply::Kind::kRejected;
  if (refused) refusal_ = message;
  emit(ElectorEvent::Kind::kStoreFailed, std::move(message));
}

bool EtcdCampaign::malformed(const std::string& what, bool ok, const std::string& error) {
  if (ok) return false;
  EtcdReply r;
  r.kind = EtcdReply::Kind::kRejected;
  r.message = "malformed answer: " + error;
  trouble(what, r);
  return true;
}

// ---- the lease -----------------------------------------------------------------------------

void EtcdCampaign::start() {
  if (started_) return;
  started_ = true;
  grant();
  // See the leader at once. In shard mode only once eligible (join() looks then): a member
  // sends nothing for the shards it does not own, and opens no watch for them.
  if (!eligible_ || eligible_()) refresh();
}

void EtcdCampaign::grant() {
  if (!started_ || stopped_ || releasing_ || granting_ || lease_ || cooldownTimer_->armed()) return;
  if (eligible_ && !eligible_()) return;  // shard mode: a lease only for a shard assigned here
  granting_ = true;
  const auto generation = generation_;
  const auto sentAt = clock_.now();
  const auto ttl =
      std::chrono::duration_cast<std::chrono::seconds>(config_.timings.leaseDuration).count();
  call("lease/grant", encodeLeaseGrant(ttl), false, [this, generation, sentAt](EtcdReply reply) {
    granting_ = false;
    LeaseGrant granted;
    std::string error;
    const bool decoded = reply.ok() && decodeLeaseGrant(reply.body, granted, error);
    if (generation != generation_ || stopped_ || releasing_) {
      // Released or stopped meanwhile: give the new lease back at once. If it is wanted again
      // by now (shard mode: eligible again), grant() asks for a new one; its guards say whether.
      if (decoded) call("lease/revoke", encodeLeaseId(granted.id), true, [](EtcdReply) {});
      return grant();
    }
    if (!reply.ok()) {
      trouble("granting a lease", reply);
      return retryTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
    }
    if (malformed("granting a lease", decoded, error)) {
      return retryTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
    }
    // etcd counts the TTL from when it applied the grant, which is after sentAt.
    lease_ = Lease{granted.id, sentAt, clock_.wallNow()};
    keepAliveTimer_->armAt(sentAt + config_.timings.renewEvery());
    join();
  });
}

void EtcdCampaign::keepAlive() {
  if (!lease_ || keepAliveInFlight_) return;
  keepAliveInFlight_ = true;
  const auto generation = generation_;
  const auto sentAt = clock_.now();
  call("lease/keepalive", encodeLeaseId(lease_->id), true,
       [this, generation, sentAt](EtcdReply reply) {
         if (generation != generation_) return;
         KeepAlive answer;
         std::string error;
         if (reply.ok() && !malformed("keeping the lease alive",
                                      decodeKeepAlive(reply.body, answer, error), error)) {
           if (answer.ttlSeconds <= 0) return onLeaseGone("etcd says the lease expired");
           if (!config_.confirmKeepAlives) return confirmed(sentAt);
           return confirmByRead(sentAt, answer.header.raftTerm);
         }
         if (reply.code == kCodeNotFound)
           return onLeaseGone("etcd does not know the lease any more");
         renewalFailed(sentAt, "keeping the lease alive", reply);
       });
}

void EtcdCampaign::confirmByRead(time::MonoTime sentAt, std::uint64_t term) {
  const auto generation = generation_;
  // Sent only now that the keep-alive's answer is here: the read's ReadIndex comes after the
  // renewal, which is what makes its term say something about it.
  call("kv/range", encodeLinearizableCount(prefix_ + hex(lease_->id)), true,
       [this, generation, sentAt, term](EtcdReply reply) {
         if (generation != generation_) return;
         Range answer;
         std::string error;
         if (!reply.ok() || malformed("confirming the keep-alive",
                                      decodeRange(reply.body, answer, error), error)) {
           return renewalFailed(sentAt, "confirming the keep-alive", reply);
         }
         if (term == 0 || answer.header.raftTerm != term) {
           // An etcd leader change between the two, or a raft leader that renewed the lease
           // on its own after losing its term: this renewal counts for nothing; the claim
           // keeps the last confirmed one.
           EtcdReply r;
           r.message = "keep-alive answered in raft term " + std::to_string(term) +
                       ", the read after it in term " + std::to_string(answer.header.raftTerm) +
                       ": not counted as a renewal";
           trouble("confirming the keep-alive", r);
           if (lastLeader_) emit(ElectorEvent::Kind::kRenewFailed, r.message);
           return renewalDone(sentAt, config_.timings.retryPeriod);
         }
         confirmed(sentAt);
       });
}

void EtcdCampaign::renewalDone(time::MonoTime sentAt, time::Duration next) {
  keepAliveInFlight_ = false;
  keepAliveTimer_->armAt(sentAt + next);
}

void EtcdCampaign::confirmed(time::MonoTime sentAt) {
  renewalDone(sentAt, config_.timings.renewEvery());
  lease_->confirmedSentAt = std::max(lease_->confirmedSentAt, sentAt);
  lease_->confirmedAt = clock_.wallNow();
  if (lastLeader_)
    emit(ElectorEvent::Kind::kRenewed, "keep-alive confirmed", clock_.now() - sentAt);
  noteLeadershipChange("keep-alive confirmed");  // a claim that lapsed resumes
  if (lastLeader_) {
    deadlineTimer_->armAt(election::claimEndsAt(lease_->confirmedSentAt, config_.timings));
  }
}

void EtcdCampaign::renewalFailed(time::MonoTime sentAt, const std::string& what,
                                 const EtcdReply& reply) {
  renewalDone(sentAt, config_.timings.retryPeriod);
  if (!reply.ok()) trouble(what, reply);
  if (lastLeader_) emit(ElectorEvent::Kind::kRenewFailed, what + ": " + reply.message);
  if (reply.kind == EtcdReply::Kind::kUnavailable && watch_) {
    // The member that did not answer may hold the watch too, silently (a partition ends no
    // stream): watch again from the next look at the queue, on the member the transport
    // turned to.
    watch_->cancel();
    watch_.reset();
    refresh();
  }
}

void EtcdCampaign::onDeadline() {
  noteLeadershipChange("renew deadline (" + time::formatDuration(config_.timings.renewDeadline) +
                       ") passed without a confirmed keep-alive");
}

void EtcdCampaign::dropLease() {
  ++generation_;  // answers about the lease still on their way are ignored
  lease_.reset();
  own_.reset();
  ownIsLowest_ = false;
  keepAliveInFlight_ = false;
  joining_ = false;
  keepAliveTimer_->disarm();
  deadlineTimer_->disarm();
}

void EtcdCampaign::onLeaseGone(const std::string& why) {
  dropLease();
  noteLeadershipChange(why);
  EtcdReply r;
  r.message = why;
  trouble("the lease", r);
  grant();
}

// ---- the queue -----------------------------------------------------------------------------

void EtcdCampaign::join() {
  if (!lease_ || own_ || joining_ || stopped_ || releasing_) return;
  if (eligible_ && !eligible_()) return;
  joining_ = true;
  const auto generation = generation_;
  const LeaseId id = lease_->id;
  const std::string key = prefix_ + hex(id);
  call("kv/txn", encodeCreateUnlessExists(key, config_.identity, id), true,
       [this, generation, id, key](EtcdReply reply) {
         if (generation != generation_) return;
         joining_ = false;
         CreateUnlessExists answer;
         std::string error;
         if (!reply.ok()) {
           trouble("joining the election as " + key, reply);
           return retryTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
         }
         if (malformed(
                 "joining the election as " + key,
                 decodeCreateUnlessExists(reply.body, key, config_.identity, id, answer, error),
                 error)) {
           return retryTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
         }
         if (!answer.created && answer.kv.lease != id) {
           EtcdReply r;
           r.message = "the key exists and belongs to lease " + hex(answer.kv.lease);
           trouble("joining the election as " + key, r);
           return retryTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
         }
         // Created now, or by an earlier try whose answer was lost: ours either way.
         own_ = Entry{key, config_.identity, answer.kv.createRevision};
         refresh();
       });
}

void EtcdCampaign::refresh() {
  if (!started_ || stopped_) return;
  if (refreshing_) {
    refreshAgain_ = true;
    return;
  }
  refreshing_ = true;
  const std::optional<Revision> ownRevision =
      own_ ? std::optional<Revision>(own_->createRevision) : std::nullopt;
  // Everything up to our key (the leader, the predecessor, ours); without a key, the leader.
  const std::string body = ownRevision ? encodeRangeByCreation(prefix_, 0, false, *ownRevision + 1)
                                       : encodeRangeByCreation(prefix_, 1, false, std::nullopt);
  call("kv/range", body, true, [this, ownRevision](EtcdReply reply) {
    refreshing_ = false;
    if (stopped_) return;
    const bool again =
        std::exchange(refreshAgain_, false) ||
        ownRevision != (own_ ? std::optional<Revision>(own_->createRevision) : std::nullopt);
    if (!reply.ok()) {
      trouble("reading the election's keys under " + prefix_, reply);
      return retryTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
    }
    Range range;
    std::string error;
    if (malformed("reading the election's keys under " + prefix_,
                  decodeRange(reply.body, range, error), error)) {
      return retryTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
    }
    if (again) return refresh();
    for (const auto& kv : range.kvs) {
      if (kv.lease != 0) continue;
      // A key without a lease never goes away by itself: it would lead forever.
      EtcdReply r;
      r.message = "the key " + kv.key +
                  " is not attached to a lease, so it would lead forever: delete it, or choose "
                  "another --lease-name";
      trouble("reading the election's keys under " + prefix_, r);
      break;
    }
    std::optional<Entry> leader;
    if (!range.kvs.empty()) {
      const auto& first = range.kvs.front();
      leader = Entry{first.key, first.value, first.createRevision};
    }
    const bool leaderChanged = leader.has_value() != leader_.has_value() ||
                               (leader && (leader->key != leader_->key ||
                                           leader->createRevision != leader_->createRevision ||
                                           leader->value != leader_->value));
    leader_ = std::move(leader);
    if (own_) {
      const bool present = !range.kvs.empty() && range.kvs.back().key == own_->key &&
                           range.kvs.back().createRevision == own_->createRevision;
      if (!present) {
        // Deleted by somebody else while the lease lives: queue again, at the back.
        own_.reset();
        ownIsLowest_ = false;
        noteLeadershipChange("our key " + prefix_ + " was deleted");
        join();
      } else {
        ownIsLowest_ = leader_->key == own_->key;
      }
    }
    if (leaderChanged) {
      const bool ours = own_ && leader_ && leader_->key == own_->key;
      emit(
          ours || !leader_ ? ElectorEvent::Kind::kObserved : ElectorEvent::Kind::kNewLeaderObserved,
          leader_ ? "leader key " + leader_->key : "no candidate");
    }
    noteLeadershipChange("this candidate's key is the oldest");
    if (!watch_ || !watch_->active()) openWatch(range.header.revision + 1);
  });
}

void EtcdCampaign::openWatch(Revision from) {
  std::weak_ptr<char> alive = alive_;
  EtcdWatchCallbacks callbacks;
  callbacks.onMessage = [this, alive](const WatchMessage& m) {
    if (!alive.expired()) onWatch(m);
  };
  callbacks.onEnd = [this, alive](const std::string& why) {
    if (alive.expired() || stopped_) return;
    watch_.reset();
    EtcdReply r;
    r.message = why;
    trouble("watching " + prefix_, r);
    // The next look at the queue opens it again, from that look's revision.
    retryTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
  };
  const auto openDeadline =
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.timings.renewDeadline);
  watch_ = etcd_.watch(encodeWatchCreate(prefix_, true, from), std::move(callbacks), openDeadline,
                       std::chrono::milliseconds(0));
}

void EtcdCampaign::onWatch(const WatchMessage& m) {
  if (m.canceled || m.error) {
    if (watch_) watch_->cancel();
    watch_.reset();
    EtcdReply r;
    r.message = m.error             ? m.error->message
                : m.compactRevision ? "compacted at revision " + std::to_string(m.compactRevision)
                                    : m.cancelReason;
    trouble("watching " + prefix_, r);
    retryTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
    return;
  }
  bool look = false;
  for (const auto& e : m.events) {
    // A key gone may have been the leader or our predecessor; a new value of the leader's key
    // (etcdctl elect's proclaim) changes who /leader names. New keys queue behind.
    look = look || e.type == WatchEvent::Type::kDelete || (leader_ && e.kv.key == leader_->key);
  }
  if (look) refresh();
}

// ---- release -------------------------------------------------------------------------------

void EtcdCampaign::stop(std::function<void()> done) {
  beginRelease(std::nullopt, std::move(done));
}

void EtcdCampaign::releaseFor(time::Duration cooldown, std::function<void()> done) {
  beginRelease(cooldown, std::move(done));
}

void EtcdCampaign::handOver(std::function<void()> done) {
  beginRelease(time::Duration::zero(), std::move(done));
}

void EtcdCampaign::reconsider() {
  if (eligible_ && !eligible_()) {
    // Shard mode: no longer assigned here. A key waiting in the queue would lead once the
    // holder goes, so it leaves the queue (the lease is revoked; none is granted until the
    // shard is assigned here again). A leader is left alone: ShardMode drops and releases it.
    if ((lease_ || granting_) && !leaderAt(clock_.now()) && !releasing_ && !stopped_)
      beginRelease(time::Duration::zero(), nullptr);
    return;
  }
  if (!lease_) return grant();
  join();
}

void EtcdCampaign::beginRelease(std::optional<time::Duration> cooldown,
                                std::function<void()> done) {
  if (done) releaseDone_.push_back(std::move(done));
  if (!cooldown) stopped_ = true;
  if (releasing_) return;  // the revoke in flight finishes it
  releasing_ = true;
  cooldownTime_ = cooldown.value_or(time::Duration::zero());
  retryTimer_->disarm();
  cooldownTimer_->disarm();
  if (stopped_ && watch_) {
    watch_->cancel();
    watch_.reset();
  }
  // Stop claiming first: whoever asks from now on hears leader=false.
  noteLeadershipChange("releasing the lease", /*voluntary=*/true);
  const std::optional<LeaseId> id = lease_ ? std::optional<LeaseId>(lease_->id) : std::nullopt;
  dropLease();
  if (!id) return finishRelease();  // a grant in flight revokes its lease when it comes
  call("lease/revoke", encodeLeaseId(*id), true, [this](EtcdReply reply) {
    if (reply.ok() || reply.code == kCodeNotFound) {
      emit(ElectorEvent::Kind::kReleased, "lease revoked");
    } else {
      trouble("revoking the lease (it expires on the server after D)", reply);
    }
    finishRelease();
  });
}

void EtcdCampaign::finishRelease() {
  releasing_ = false;
  if (!stopped_) {
    cooldownTimer_->armAt(clock_.now() + cooldownTime_);
  } else if (watch_) {  // stop() came while a releaseFor() was under way
    watch_->cancel();
    watch_.reset();
  }
  auto done = std::move(releaseDone_);
  releaseDone_.clear();
  for (auto& f : done)
    f();
}

// ---- leadership ----------------------------------------------------------------------------

bool EtcdCampaign::leaderAt(time::MonoTime now) const {
  return started_ && !stopped_ && !releasing_ && lease_ && own_ && ownIsLowest_ &&
         now < election::claimEndsAt(lease_->confirmedSentAt, config_.timings);
}

election::Leadership EtcdCampaign::leadership() const {
  election::Leadership l;
  l.identity = config_.identity;
  l.problem = refusal_;
  if (leader_) {
    l.holder = leader_->value;
    l.fencingToken = leader_->createRevision;
  }
  const auto now = clock_.now();
  if (leaderAt(now)) {
    election::describeClaim(l, own_->createRevision,
                            election::claimEndsAt(lease_->confirmedSentAt, config_.timings), now,
                            clock_);
    l.acquireTime = acquiredAt_;
    l.renewTime = lease_->confirmedAt;
  }
  return l;
}

std::optional<time::Duration> EtcdCampaign::holdingWithoutRenewalFor() const {
  if (!lease_ || !own_ || !ownIsLowest_) return std::nullopt;
  return clock_.now() - lease_->confirmedSentAt;
}

void EtcdCampaign::noteLeadershipChange(std::string detail, bool voluntary) {
  const bool leader = leaderAt(clock_.now());
  if (leader == lastLeader_) return;
  lastLeader_ = leader;
  if (leader) {
    if (acquiredToken_ != own_->createRevision) acquiredAt_ = clock_.wallNow();
    acquiredToken_ = own_->createRevision;
    deadlineTimer_->armAt(election::claimEndsAt(lease_->confirmedSentAt, config_.timings));
  } else {
    deadlineTimer_->disarm();
  }
  emit(leader ? ElectorEvent::Kind::kAcquired : ElectorEvent::Kind::kSteppedDown, std::move(detail),
       {}, voluntary && !leader);
}

void EtcdCampaign::emit(ElectorEvent::Kind kind, std::string detail, time::Duration latency,
                        bool voluntary) {
  if (!handler_) return;
  ElectorEvent e{kind, leader_ ? leader_->value : std::string(), std::nullopt, std::move(detail),
                 latency};
  e.voluntary = voluntary;
  if (own_ && (kind == ElectorEvent::Kind::kAcquired || kind == ElectorEvent::Kind::kRenewed)) {
    e.token = own_->createRevision;
  } else if (leader_) {
    e.token = leader_->createRevision;
  }
  handler_(e);
}

}  // namespace leasehold::etcd

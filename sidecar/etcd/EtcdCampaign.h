#pragma once
// The Candidacy on etcd v3 (docs/design.md, "The etcd store"), in etcd's own election layout so
// that `etcdctl elect NAME` candidates and leasehold's compete on one election and
// `etcdctl elect -l NAME` shows leasehold's leader:
//
//  - each candidate holds an etcd lease with TTL D (whole seconds), kept alive every P with one
//    keep-alive request each;
//  - it joins the queue with the key NAME/<lease id in hex>, created unless it exists and
//    attached to the lease, value = its identity; the key's create revision is its place in
//    the queue and, once it leads, its fencing token (revisions only go up, never reset);
//  - the key with the lowest create revision leads; the others watch the election's prefix and
//    look again when a key goes (a leader's ends when its lease is revoked or expires);
//  - the claim rule of election/ClaimRule.h: leader only while its key is the lowest and now <
//    (send time of the grant or of the last confirmed keep-alive) + R. etcd expires a lease D
//    after it applied the last keep-alive, which was after that send, and only then deletes
//    the key that lets the next candidate lead;
//  - a keep-alive is confirmed when it was answered with a TTL AND a linearizable read sent
//    after that answer came (kv/range, count only, never serializable) is answered with the
//    same header.raft_term. A keep-alive alone can be renewed by a raft leader that lost its
//    term while paused, on a lessor nobody else reads (docs/design.md, "The etcd store": the
//    rule and why it is enough). One renewal = one keep-alive, then one read, never two
//    in flight.
//
// No I/O of its own: etcd through EtcdTransport, time through Clock, so that every race replays
// in a unit test on a fake clock.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "election/Candidacy.h"
#include "election/ElectionTimings.h"
#include "etcd/EtcdTransport.h"
#include "time/Clock.h"

namespace leasehold::etcd {

struct EtcdCampaignConfig {
  std::string identity;  // the key's value: what `etcdctl elect -l` and /leader's holder show
  std::string election;  // --lease-name: the keys live under "<election>/"
  election::ElectionTimings timings;
  // Confirm keep-alives by a linearizable read (above). Off only where nobody asks for the
  // claim (the shard group's membership), which saves that read.
  bool confirmKeepAlives = true;
};

class EtcdCampaign final : public election::Candidacy {
 public:
  // Throws std::invalid_argument for impossible timings, an empty identity or election name.
  EtcdCampaign(time::Clock& clock, EtcdTransport& etcd, EtcdCampaignConfig config);
  ~EtcdCampaign() override;
  EtcdCampaign(const EtcdCampaign&) = delete;
  EtcdCampaign& operator=(const EtcdCampaign&) = delete;

  void start() override;
  // Stops claiming at once, then revokes the lease: the key goes with it and the next candidate
  // leads as soon as its watch tells it (milliseconds). Without an answer the lease expires
  // on the server after D.
  void stop(std::function<void()> done) override;
  void releaseFor(time::Duration cooldown, std::function<void()> done) override;
  // etcd's queue has no way to name the next holder: the same as releaseFor(0).
  void handOver(std::function<void()> done) override;

  election::Leadership leadership() const override;
  std::optional<time::Duration> holdingWithoutRenewalFor() const override;
  void setEventHandler(std::function<void(const election::ElectorEvent&)> handler) override {
    handler_ = std::move(handler);
  }
  void setAlias(std::string) override {}  // handovers name nobody on etcd
  // Shard mode: nothing is sent (no lease, no key, no look at the queue, no watch) until
  // eligible; reconsider() while not eligible takes a key that waits in the queue (not leading)
  // out of it, revoking its lease.
  void setEligibility(std::function<bool()> eligible) override { eligible_ = std::move(eligible); }
  void reconsider() override;

  // The election's prefix ("<election>/") and this candidate's key, once it has one.
  const std::string& prefix() const { return prefix_; }
  std::optional<std::string> key() const;

 private:
  struct Lease {
    LeaseId id = 0;
    time::MonoTime confirmedSentAt;  // the grant's or last confirmed keep-alive's send time
    time::WallTime confirmedAt;      // when its answer came, for people
  };
  struct Entry {  // a key in the queue
    std::string key;
    std::string value;
    Revision createRevision = 0;
  };

  void grant();
  void keepAlive();
  // The read that confirms a keep-alive sent at sentAt, answered in raft term `term`.
  void confirmByRead(time::MonoTime sentAt, std::uint64_t term);
  // The end of a renewal (keep-alive and read): the next keep-alive I (--renew-interval) after
  // this one's send when it was confirmed, P after it when not.
  void confirmed(time::MonoTime sentAt);
  void renewalFailed(time::MonoTime sentAt, const std::string& what, const EtcdReply& reply);
  void renewalDone(time::MonoTime sentAt, time::Duration next);
  void join();
  void refresh();
  void openWatch(Revision from);
  void onWatch(const WatchMessage& m);
  // Forgets the lease and our key (the lease expired, or is being revoked).
  void dropLease();
  void onLeaseGone(const std::string& why);
  void beginRelease(std::optional<time::Duration> cooldown, std::function<void()> done);
  void finishRelease();
  void resetCandidacy();
  void onDeadline();

  bool leaderAt(time::MonoTime now) const;
  void noteLeadershipChange(std::string detail, bool voluntary = false);
  void emit(election::ElectorEvent::Kind kind, std::string detail, time::Duration latency = {},
            bool voluntary = false);
  // A request failed: said once per distinct problem, not every P.
  void trouble(const std::string& what, const EtcdReply& reply);
  void call(std::string method, std::string body, bool idempotent,
            std::function<void(EtcdReply)> then);
  bool malformed(const std::string& what, bool ok, const std::string& error);

  time::Clock& clock_;
  EtcdTransport& etcd_;
  EtcdCampaignConfig config_;
  std::string prefix_;
  std::function<void(const election::ElectorEvent&)> handler_;
  std::function<bool()> eligible_;
  std::unique_ptr<time::Timer> keepAliveTimer_;
  std::unique_ptr<time::Timer> deadlineTimer_;
  std::unique_ptr<time::Timer> retryTimer_;  // grant, join or refresh after a failure
  std::unique_ptr<time::Timer> cooldownTimer_;
  std::shared_ptr<EtcdWatch> watch_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();

  bool started_ = false;
  bool stopped_ = false;
  bool releasing_ = false;
  bool granting_ = false;
  bool keepAliveInFlight_ = false;  // a keep-alive or its confirming read
  bool joining_ = false;
  bool refreshing_ = false;
  bool refreshAgain_ = false;
  std::uint64_t generation_ = 0;  // bumped when the lease is dropped: late answers are ignored
  std::optional<Lease> lease_;
  std::optional<Entry> own_;     // our key, once created
  std::optional<Entry> leader_;  // the lowest key, as last seen
  bool ownIsLowest_ = false;     // no key created before ours, as last seen
  bool lastLeader_ = false;
  std::optional<time::WallTime> acquiredAt_;
  Revision acquiredToken_ = 0;  // the term acquiredAt_ belongs to
  time::Duration cooldownTime_{};
  std::vector<std::function<void()>> releaseDone_;
  std::string lastTrouble_;
  // While etcd refuses this candidate's requests (kDenied: credentials or role; kRejected): the
  // last such trouble, shown as Leadership::problem until a request is answered.
  std::string refusal_;
};

}  // namespace leasehold::etcd

#pragma once
// One replica's candidacy for one lock, whatever store keeps the lock: the boundary between
// the store-specific election below (election::Elector on a Kubernetes Lease; the etcd
// campaign) and everything above that is written once for every store (lock::Sidecar's fan-out
// to /leader, SSE, the status file and metrics; run mode's supervisor; shard assignment).
//
// Every implementation obeys the claim rule of election/ClaimRule.h: leadership() is computed
// when asked, leader only while now < (send time of the last write or keep-alive the store
// confirmed) + R on the monotonic clock, so a paused process answers false when it wakes. Its
// fencing token goes up with every new term.
//
// Events are delivered on the event loop, never from inside a call, except where a method says.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "election/ElectionTimings.h"
#include "election/Identity.h"
#include "election/Leadership.h"
#include "time/Time.h"

namespace leasehold::election {

// What every store's candidacy is built with and what the code above the boundary may read of
// it (lock::Sidecar: its identity, and D for /healthz). A store's own settings go beside it in
// that store's config (election::ElectorConfig's follower mode and --coordinated on a Lease,
// etcd::EtcdCampaignConfig's election name), never in here.
struct CandidateConfig {
  Identity identity;
  ElectionTimings timings;
};

struct ElectorEvent {
  enum class Kind {
    kAcquired,           // became leader (new term, new fencing token)
    kRenewed,            // renewal confirmed
    kRenewFailed,        // a renewal attempt failed (still leader until the deadline)
    kSteppedDown,        // stopped claiming: deadline passed, lease lost, or released
    kNewLeaderObserved,  // another holder (or none) observed
    kReleased,           // the release write was confirmed
    kObserved,           // any other change of the observed record
    kHandoverRequested,  // leader only: the lock asks for another holder (detail names it)
    kStoreFailed,        // a request to the store failed (detail: which and why), said once
                         // per distinct problem
  };
  Kind kind;
  std::string holder;
  std::optional<std::int64_t> token;
  std::string detail;        // why, for the log
  time::Duration latency{};  // kRenewed/kAcquired: request round trip
  // kSteppedDown: asked to (stop() or releaseFor()), not forced by a deadline or another holder.
  bool voluntary = false;
};

const char* toString(ElectorEvent::Kind k);

class Candidacy {
 public:
  virtual ~Candidacy() = default;

  virtual void start() = 0;
  // Stops claiming at once, lets the lock go if this replica holds it, and stops competing.
  // done runs when the release is confirmed, or there was nothing to release, or it failed.
  virtual void stop(std::function<void()> done) = 0;
  // Like stop(), but competes again once cooldown has passed.
  virtual void releaseFor(time::Duration cooldown, std::function<void()> done) = 0;
  // The answer to kHandoverRequested, once whatever acts for the leader has stopped: stops
  // claiming at once and lets the lock go to the replica the request names.
  virtual void handOver(std::function<void()> done) = 0;

  virtual Leadership leadership() const = 0;
  // How long since the last confirmed renewal of a lock that still names this replica as
  // holder; nullopt when it is not ours. A holder that cannot renew blocks everybody until the
  // lock expires: the health probe's input.
  virtual std::optional<time::Duration> holdingWithoutRenewalFor() const = 0;

  virtual void setEventHandler(std::function<void(const ElectorEvent&)> handler) = 0;
  // Another name this replica answers to in a handover request (its pod name).
  virtual void setAlias(std::string alias) = 0;
  // Shard mode: acquire only while `eligible` says yes; holding and letting go are not
  // affected. Call reconsider() when the answer may have turned to yes.
  virtual void setEligibility(std::function<bool()> eligible) = 0;
  virtual void reconsider() = 0;
};

}  // namespace leasehold::election

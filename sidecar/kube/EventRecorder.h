#pragma once
// Kubernetes Events about the Lease ("<identity> became leader", "<identity> stopped leading",
// reason LeaderElection, type Normal), as client-go's leader election records them, so that
// `kubectl describe lease` shows the history of terms.
//
// Fire and forget: events are queued (bounded: when full, the oldest queued event is dropped),
// posted one at a time, never retried, and a failure is only reported to the failure handler.
//
// Repeats are merged as client-go's EventCorrelator does: an event with the same message about
// the same Lease (uid) as one already posted PATCHes that Event (count + 1, lastTimestamp now)
// instead of creating another, so a replica that keeps re-acquiring shows as "(x5 over 3m)" in
// `kubectl describe lease`. If that Event is gone (404: events expire after an hour), a new one
// is created.
// Nothing here can delay or fail the election. Give it its own ApiClient: ordinary requests of
// one client share one connection in order, and an event stuck in a slow API server must not
// queue up in front of a renewal.
//
// On shutdown, drain() lets queued events go out within a budget; whatever is left is then
// cancelled deliberately by shutting the ApiClient down (a request abandoned by a process that
// simply exits may still be applied, or logged by the server as a timeout).
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "election/lease/LeaseRecord.h"
#include "kube/ApiTransport.h"
#include "time/Clock.h"

namespace leasehold::kube {

struct EventRecorderOptions {
  std::size_t maxQueued = 16;
  std::chrono::milliseconds requestDeadline{5000};
};

// What an Event says about whom; the pieces of the POST body that are not the message.
struct LeaseEventTarget {
  std::string leaseName;
  std::string ns;
  std::string reportingInstance;  // this replica's identity
};

class EventRecorder {
 public:
  EventRecorder(ApiTransport& api, time::Clock& clock, LeaseEventTarget target,
                EventRecorderOptions options = {});
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Why an event could not be posted, for the log (no credentials in it).
  void setFailureHandler(std::function<void(const std::string&)> f) { onFailure_ = std::move(f); }

  // Queues a Normal/LeaderElection event about the Lease. `lease` is the record last seen (its
  // object JSON gives uid and resourceVersion for involvedObject); nullopt leaves them out.
  void record(const std::optional<election::LeaseRecord>& lease, std::string message);

  // Runs done once every queued event has been answered, or after `budget`, whichever is first.
  void drain(time::Duration budget, std::function<void()> done);

  std::size_t pending() const { return queue_.size() + (inflight_ ? 1 : 0); }
  std::uint64_t posted() const { return posted_; }
  std::uint64_t failed() const { return failed_; }

  // The core/v1 Event body (exposed for tests). nanos: wall-clock nanoseconds since the epoch,
  // which name the event "<lease>.<hex nanos>" like client-go does.
  static std::string eventBody(const LeaseEventTarget& target,
                               const std::optional<election::LeaseRecord>& lease,
                               const std::string& message, std::int64_t nanos);
  // The merge patch that records one more occurrence of a posted event.
  static std::string repeatPatch(std::int64_t count, std::int64_t nanos);

 private:
  struct Pending {
    std::string key;   // what makes two events the same: the Lease's uid and the message
    std::string name;  // metadata.name if it is created
    std::string body;  // the POST body
    std::int64_t nanos;
  };
  struct Posted {
    std::string name;
    std::int64_t count;
  };

  void pump();
  void post(Pending event);
  void patch(Pending event, Posted posted);
  void answered(bool ok, const std::string& what, const ApiResponse& r);
  void finishDrainIfIdle();
  void finishDrain();

  ApiTransport& api_;
  time::Clock& clock_;
  LeaseEventTarget target_;
  EventRecorderOptions options_;
  std::function<void(const std::string&)> onFailure_;
  std::deque<Pending> queue_;
  std::map<std::string, Posted> postedByKey_;  // bounded: cleared when it reaches 64 entries
  bool inflight_ = false;
  std::uint64_t posted_ = 0;
  std::uint64_t failed_ = 0;
  std::function<void()> drainDone_;
  std::unique_ptr<time::Timer> drainTimer_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube

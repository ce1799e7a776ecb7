#pragma once
// Change notifications for every Lease with one label (a shard group): LIST with the
// labelSelector, then WATCH from the list's resourceVersion. The same rules as LeaseWatch (one
// Lease): resumed from the last resourceVersion when the server ends it, re-listed on 410,
// unhealthy (the electors poll) only while it is denied or keeps failing. One watch serves the
// membership Leases and all N shard Leases, so followers of a shard send no requests at all.
// The machinery is ListWatchLoop's (shared with LeaseWatch); this class selects the group and
// hands its Leases on by name.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kube/ApiTransport.h"
#include "kube/LeaseCodec.h"
#include "kube/ListWatchLoop.h"
#include "time/Clock.h"

namespace leasehold::kube {

class LeaseGroupObserver {
 public:
  virtual ~LeaseGroupObserver() = default;
  // The whole group as listed: a Lease not in it is gone.
  virtual void onGroupListed(const std::vector<NamedLease>& leases) = 0;
  // One Lease changed (nullopt: deleted).
  virtual void onGroupLease(const std::string& name,
                            const std::optional<election::LeaseRecord>& record) = 0;
  // false: notifications may be missed (the electors should poll).
  virtual void onGroupWatchState(bool healthy) = 0;
};

struct LeaseGroupWatchOptions {
  std::string ns;
  std::string labelSelector;  // "key=value", already valid
  std::chrono::milliseconds requestDeadline{5000};
  int watchTimeoutSeconds = 300;
  std::function<void(const std::string&)> onProblem;  // for the log
};

class LeaseGroupWatch {
 public:
  LeaseGroupWatch(ApiTransport& api, time::Clock& clock, LeaseGroupObserver& observer,
                  LeaseGroupWatchOptions options, std::function<double()> random01);
  ~LeaseGroupWatch();
  LeaseGroupWatch(const LeaseGroupWatch&) = delete;
  LeaseGroupWatch& operator=(const LeaseGroupWatch&) = delete;

  void start();
  void stop();

 private:
  LeaseGroupObserver& observer_;
  ListWatchLoop loop_;  // last: it goes first, while the observer is still there
};

}  // namespace leasehold::kube

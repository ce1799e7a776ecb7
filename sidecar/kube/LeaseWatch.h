#pragma once
// Change notifications for one Lease: LIST with the metadata.name field selector, then WATCH
// from the list's resourceVersion; resumes from the last resourceVersion seen when the server
// ends the watch (timeoutSeconds), re-lists on 410 Expired (an ERROR event or a plain 410), and
// tells the observer the watch is unhealthy (so it polls) while it is denied or broken.
//
// A watch that breaks once (a dropped connection, an API server restart) is resumed at once from
// its resourceVersion without declaring it unhealthy: that loses no event and costs no poll. Only
// when the resumed watch fails too does the observer poll, with backoff between attempts. The
// elector's expiry timer covers a watch that is silently dead. The machinery is ListWatchLoop's
// (shared with LeaseGroupWatch); this class names the Lease and decodes it.
#include <functional>
#include <string>

#include "election/lease/LeaseStore.h"
#include "kube/ApiTransport.h"
#include "kube/ListWatchLoop.h"
#include "time/Clock.h"

namespace leasehold::kube {

class LeaseClient;
struct LeaseClientOptions;

class LeaseWatch {
 public:
  LeaseWatch(ApiTransport& api, time::Clock& clock, const LeaseClient& lease,
             election::LeaseObserver& observer, const LeaseClientOptions& options,
             std::function<double()> random01);
  ~LeaseWatch();
  LeaseWatch(const LeaseWatch&) = delete;
  LeaseWatch& operator=(const LeaseWatch&) = delete;

  void start();
  // Why the watch last failed, for logs ("" if it never did).
  const std::string& lastError() const { return loop_.lastError(); }

 private:
  bool onList(const std::string& body, std::string& resourceVersion, std::string& error);

  const LeaseClient& lease_;
  election::LeaseObserver& observer_;
  ListWatchLoop loop_;  // last: it goes first, while what its callbacks use is still there
};

}  // namespace leasehold::kube

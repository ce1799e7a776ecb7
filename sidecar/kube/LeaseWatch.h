#pragma once
// Change notifications for one Lease: LIST with the metadata.name field selector, then WATCH
// from the list's resourceVersion; resumes from the last resourceVersion seen when the server
// ends the watch (timeoutSeconds), re-lists on 410 Expired (an ERROR event or a plain 410), and
// tells the observer the watch is unhealthy (so it polls) while it is denied or broken.
//
// A watch that breaks once (a dropped connection, an API server restart) is resumed at once from
// its resourceVersion without declaring it unhealthy: that loses no event and costs no poll. Only
// when the resumed watch fails too does the observer poll, with backoff between attempts. The
// elector's expiry timer covers a watch that is silently dead.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "election/LeaseStore.h"
#include "kube/ApiTransport.h"
#include "net/LineSplitter.h"
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
  const std::string& lastError() const { return lastError_; }

 private:
  void list();
  void watchFrom(const std::string& resourceVersion);
  void onLine(std::string_view line);
  void retryLater(const std::string& why, bool relist);
  void setHealthy(bool healthy, const std::string& why);
  void failed(const std::string& why, bool relist);

  ApiTransport& api_;
  time::Clock& clock_;
  const LeaseClient& lease_;
  election::LeaseObserver& observer_;
  int timeoutSeconds_;
  std::chrono::milliseconds deadline_;
  std::function<double()> random01_;
  std::function<void(const std::string&)> onProblem_;
  std::unique_ptr<time::Timer> retryTimer_;
  std::shared_ptr<ApiStream> stream_;
  net::LineSplitter splitter_;
  std::string resourceVersion_;
  std::string lastError_;
  bool relistNext_ = true;
  bool healthy_ = false;
  bool reportedOnce_ = false;
  int failures_ = 0;
  bool justListed_ =
      false;  // no event since the last list: a 410 now is a failure, not age  // consecutive
              // failed watches; reset by a delivered event or a clean end
  std::chrono::milliseconds backoff_{500};
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube

#pragma once
// Change notifications for every Lease with one label (a shard group): LIST with the
// labelSelector, then WATCH from the list's resourceVersion. The same rules as LeaseWatch (one
// Lease): resumed from the last resourceVersion when the server ends it, re-listed on 410,
// unhealthy (the electors poll) only while it is denied or keeps failing. One watch serves the
// membership Leases and all N shard Leases, so followers of a shard send no requests at all.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kube/ApiTransport.h"
#include "kube/LeaseCodec.h"
#include "net/LineSplitter.h"
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
  std::string collectionPath() const;
  std::string selector() const;
  void list();
  void watchFrom(const std::string& resourceVersion);
  void onLine(std::string_view line);
  void retryLater(const std::string& why, bool relist);
  void failed(const std::string& why, bool relist);
  void setHealthy(bool healthy, const std::string& why);

  ApiTransport& api_;
  time::Clock& clock_;
  LeaseGroupObserver& observer_;
  LeaseGroupWatchOptions options_;
  std::function<double()> random01_;
  std::unique_ptr<time::Timer> retryTimer_;
  std::shared_ptr<ApiStream> stream_;
  net::LineSplitter splitter_;
  std::string resourceVersion_;
  bool relistNext_ = true;
  bool healthy_ = false;
  bool reportedOnce_ = false;
  bool justListed_ = false;  // no event since the last list: a 410 now is a failure
  bool stopped_ = false;
  int failures_ = 0;  // consecutive failed watches
  std::chrono::milliseconds backoff_{500};
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube

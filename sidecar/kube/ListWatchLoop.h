#pragma once
// The list-then-watch machinery of a selection of Leases, shared by LeaseWatch (one Lease, by
// field selector) and LeaseGroupWatch (a shard group, by label selector), and of one pod
// (HolderPodWatch, --fast-failover): LIST with the
// selector, then WATCH (with bookmarks) from the list's resourceVersion; resumed from the last
// resourceVersion seen when the server ends the watch (timeoutSeconds, spread over [T, 2T) so
// that replicas do not re-watch in step), re-listed on 410 Expired (an ERROR event or a plain
// 410), and reported unhealthy (so the electors poll) while it is denied or broken.
//
// A watch that breaks once (a dropped connection, an API server restart) is resumed at once
// from its resourceVersion without declaring it unhealthy: that loses no event and costs no
// poll. Only when the resumed watch fails too is it unhealthy, retried with backoff (500 ms
// doubling to 30 s). A refusal (401/403) waits at least 1 s, then 2, 4 ... up to 60 s while the
// refusals go on, until a watch is accepted: a kube-apiserver that has just started refuses
// until its RBAC cache syncs (seconds), and a missing Role should cost one LIST and WATCH a
// minute, not two a second, while the electors poll. The owner decodes the LIST (its shape
// differs: one Lease or all of them) and turns events into its observer's calls.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "kube/ApiTransport.h"
#include "kube/LeaseCodec.h"
#include "net/LineSplitter.h"
#include "time/Clock.h"

namespace leasehold::kube {

struct ListWatchLoopOptions {
  std::string collectionPath;  // "/apis/coordination.k8s.io/v1/namespaces/NS/leases"
  std::string selector;        // "fieldSelector=..." or "labelSelector=...", already escaped
  std::string subject;         // how the problems name it in the log: "watch", "group watch"
  std::string whileUnavailable = "polling instead";  // what the log says happens meanwhile
  WatchObjects objects = WatchObjects::kLeases;      // kOther: events carry the object's JSON text
  std::chrono::milliseconds requestDeadline{5000};
  int watchTimeoutSeconds = 300;
  std::function<void(const std::string&)> onProblem;  // for the log; may be unset
};

struct ListWatchLoopCallbacks {
  // The LIST answer's body: decode it, set resourceVersion (the list's) and deliver it; false
  // with `error` when it does not decode (the list is retried later).
  std::function<bool(const std::string& body, std::string& resourceVersion, std::string& error)>
      onList;
  // An ADDED, MODIFIED or DELETED event (bookmarks and errors stay here).
  std::function<void(const WatchEvent& event)> onEvent;
  // false: notifications may be missed (poll). Told once at the first answer, then on changes.
  std::function<void(bool healthy)> onHealth;
};

class ListWatchLoop {
 public:
  ListWatchLoop(ApiTransport& api, time::Clock& clock, ListWatchLoopOptions options,
                ListWatchLoopCallbacks callbacks, std::function<double()> random01);
  ~ListWatchLoop();
  ListWatchLoop(const ListWatchLoop&) = delete;
  ListWatchLoop& operator=(const ListWatchLoop&) = delete;

  // Lists (again, after stop()).
  void start();
  // Cancels the watch and any retry; nothing more is sent or told until start().
  void stop();
  // Why the watch last failed, for logs ("" if it never did).
  const std::string& lastError() const { return lastError_; }

 private:
  void list();
  void watchFrom(const std::string& resourceVersion);
  void onLine(std::string_view line);
  void retryLater(const std::string& why, bool relist);
  // 401/403: the wait before the retry is at least refusedBackoff_, which then doubles.
  void refused();
  void failed(const std::string& why, bool relist);
  void setHealthy(bool healthy, const std::string& why);

  ApiTransport& api_;
  time::Clock& clock_;
  ListWatchLoopOptions options_;
  ListWatchLoopCallbacks callbacks_;
  std::function<double()> random01_;
  std::unique_ptr<time::Timer> retryTimer_;
  std::shared_ptr<ApiStream> stream_;
  net::LineSplitter splitter_;
  std::string resourceVersion_;
  std::string lastError_;
  bool relistNext_ = true;
  bool healthy_ = false;
  bool reportedOnce_ = false;
  bool justListed_ = false;  // no event since the last list: a 410 now is a failure, not age
  bool stopped_ = false;
  int failures_ = 0;  // consecutive failed watches; reset by a delivered event or a clean end
  std::chrono::milliseconds backoff_{500};
  std::chrono::milliseconds refusedBackoff_{1000};  // the next refusal's wait, see above
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube

#pragma once
// --coordinated: this replica's coordination.k8s.io/v1beta1 LeaseCandidate, the API server's
// coordinated-leader-election controller's list of who may hold a Lease (cf. client-go's
// tools/leaderelection/leasecandidate.go). Named after the identity: the controller writes the
// candidate's name into the Lease's holderIdentity.
//
// - start(): POST it (leaseName, binaryVersion = emulationVersion = leasehold's version,
//   strategy, renewTime now). 409 AlreadyExists (an earlier process with the same identity):
//   read it and renew it. Failures are retried with backoff (500 ms doubling to 30 s);
//   404 means the server does not serve leasecandidates (feature gate off): said once, retried.
// - It is renewed (PUT, renewTime now, compare-and-swap on resourceVersion; 409: re-read and
//   renew; 404: create again) when the controller pings it (pingTime later than renewTime) and
//   every renewInterval (5 minutes, like client-go) so it is not garbage collected.
// - Pings are seen through a watch of this one object (fieldSelector metadata.name), resumed
//   from its resourceVersion: one long-lived request per replica, reopened every 5-10 minutes,
//   an event only when the candidate changes, and a ping answered within a round trip. Polling
//   with GET would need one request a second per replica for the same reaction (the controller
//   waits 5 s for pinged candidates before it elects without them). While the watch is broken,
//   the object is read (GET) before every new attempt, so a ping is not missed.
// - stop(): DELETE it (404 is fine); done runs after the answer, whatever it was.
// - Same-second ties: the controller breaks a tie of versions on creationTimestamp, which has
//   seconds, and v1.37.2 then picks among equal candidates in no stable order, moving leadership
//   between them every few seconds. So after each create the candidates of the Lease are listed
//   (at once and tieCheckDelay later, which catches one created later in the same second): a
//   candidate sharing our creation second with a smaller name makes us delete ours and create it
//   again 1-2 s later (at most maxTieMoves times). The smallest of a tie keeps its place, so
//   ties resolve within as many rounds as replicas started together.
//
// Errors are values: they reach the problem handler (for the log), never an exception.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kube/ApiTransport.h"
#include "net/LineSplitter.h"
#include "time/Clock.h"

namespace leasehold::kube {

struct LeaseCandidateSpec {
  std::string ns;
  std::string name;       // the identity; a DNS-1123 subdomain
  std::string leaseName;  // the Lease it is a candidate for
  std::string binaryVersion;
  std::string emulationVersion;                     // = binaryVersion unless set
  std::string strategy = "OldestEmulationVersion";  // the only one the controller elects for
};

struct LeaseCandidateOptions {
  time::Duration renewInterval = std::chrono::minutes(5);
  std::chrono::milliseconds requestDeadline{5000};
  int watchTimeoutSeconds = 300;  // randomised between it and twice it, like client-go
  time::Duration initialBackoff = std::chrono::milliseconds(500);
  time::Duration maxBackoff = std::chrono::seconds(30);
  time::Duration tieCheckDelay = std::chrono::seconds(2);
  int maxTieMoves = 10;
};

class LeaseCandidate {
 public:
  LeaseCandidate(ApiTransport& api, time::Clock& clock, LeaseCandidateSpec spec,
                 std::function<double()> random01, LeaseCandidateOptions options = {});
  ~LeaseCandidate();
  LeaseCandidate(const LeaseCandidate&) = delete;
  LeaseCandidate& operator=(const LeaseCandidate&) = delete;

  void setProblemHandler(std::function<void(const std::string&)> f) { onProblem_ = std::move(f); }
  // Every confirmed write (create or renewal), with whether it answered a ping: for the log.
  void setWrittenHandler(std::function<void(bool ping)> f) { onWritten_ = std::move(f); }

  void start();
  void stop(std::function<void()> done);

  std::string collectionPath() const;
  std::string objectPath() const;
  // The body of a create (object empty) or a renewal of the object last read.
  std::string body(const std::string& object, const std::string& renewTime) const;
  // pingTime later than renewTime in this object (JSON)?
  static bool pinged(const std::string& object);
  // In a LeaseCandidateList (JSON): does a candidate for the same Lease share our
  // creationTimestamp with a smaller name (so that ours should move)?
  bool tiedWithSmaller(const std::string& list) const;

 private:
  enum class Next { kCreate, kRenew, kRead };
  void send(Next what);
  void onAnswer(Next what, const ApiResponse& r);
  void retry(Next what, const std::string& why);
  void keep(const std::string& object);
  void watch();
  void onLine(std::string_view line);
  void watchFailed(const std::string& why);
  void renewSoon(bool ping);
  // DELETE of our object, inflight_ until it answers; `answered` is not called once we are gone.
  void deleteObject(std::function<void(const ApiResponse&)> answered);
  void sendDelete();
  void finishStop();
  void checkTie();
  void move();

  ApiTransport& api_;
  time::Clock& clock_;
  LeaseCandidateSpec spec_;
  std::function<double()> random01_;
  LeaseCandidateOptions options_;
  std::function<void(const std::string&)> onProblem_;
  std::function<void(bool)> onWritten_;
  std::unique_ptr<time::Timer> renewTimer_;
  std::unique_ptr<time::Timer> retryTimer_;
  std::unique_ptr<time::Timer> watchTimer_;
  std::unique_ptr<time::Timer> tieTimer_;   // the next tie check
  std::unique_ptr<time::Timer> moveTimer_;  // delete and create again
  int tieChecksLeft_ = 0;
  int moves_ = 0;
  std::shared_ptr<ApiStream> stream_;
  net::LineSplitter splitter_;
  std::string object_;  // as last read or written
  std::string resourceVersion_;
  std::string lastProblem_;
  Next pending_ = Next::kCreate;  // what the retry timer sends
  bool started_ = false;
  bool stopped_ = false;
  bool stopFinished_ = false;
  bool inflight_ = false;
  bool renewWanted_ = false;  // a ping arrived while a request was in flight
  bool pingWanted_ = false;
  time::Duration backoff_;
  time::Duration watchBackoff_;
  std::function<void()> stopDone_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube

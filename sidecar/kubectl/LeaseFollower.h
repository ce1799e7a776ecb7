#pragma once
// Follows one Lease for the plugin: GET it (or start from a resourceVersion already known),
// then WATCH from that resourceVersion, so no change in between is missed; a watch the server
// ends (timeoutSeconds) is resumed from the last resourceVersion seen, a 410 (too old) re-reads
// the Lease. Failures are one line each: a refused or missing Lease at once, a watch that keeps
// breaking after three attempts in a row without an event.
#include <functional>
#include <memory>
#include <string>

#include "election/lease/LeaseRecord.h"
#include "kube/ApiTransport.h"
#include "net/LineSplitter.h"
#include "time/Clock.h"

namespace leasehold::kubectl {

class LeaseFollower {
 public:
  struct Callbacks {
    std::function<void(const election::LeaseRecord&)> onLease;  // the GET, then every change
    std::function<void()> onDeleted;
    std::function<void(const std::string& line)> onFailure;  // nothing follows it
  };

  LeaseFollower(kube::ApiTransport& api, time::Clock& clock, std::string server, std::string ns,
                std::string name, std::chrono::milliseconds requestTimeout, Callbacks callbacks);
  ~LeaseFollower();
  LeaseFollower(const LeaseFollower&) = delete;
  LeaseFollower& operator=(const LeaseFollower&) = delete;

  // Reads the Lease first (its onLease comes first).
  void start();
  // Watches from `resourceVersion` without reading first (the caller has just seen it).
  void startFrom(const std::string& resourceVersion);
  void stop();

  std::string itemPath() const;

 private:
  void get();
  void watch();
  void onLine(std::string_view line);
  void broken(const std::string& why);
  void fail(const std::string& line);

  kube::ApiTransport& api_;
  time::Clock& clock_;
  std::string server_, ns_, name_;
  std::chrono::milliseconds requestTimeout_;
  Callbacks cb_;
  std::shared_ptr<kube::ApiStream> stream_;
  std::unique_ptr<time::Timer> retry_;
  net::LineSplitter splitter_;
  std::string resourceVersion_;
  int failuresInARow_ = 0;
  bool stopped_ = false;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kubectl

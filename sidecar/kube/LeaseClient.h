#pragma once
// election::LeaseStore on a real API server: GET/POST/PUT of one Lease, compare-and-swap on
// metadata.resourceVersion, every write starting from the object last read (unknown fields,
// labels and annotations survive), and change notifications from LeaseWatch.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "election/lease/LeaseStore.h"
#include "kube/ApiTransport.h"
#include "kube/LeaseCodec.h"
#include "time/Clock.h"

namespace leasehold::kube {

class LeaseWatch;

struct LeaseClientOptions {
  std::chrono::milliseconds requestDeadline{5000};
  // Watches end after this many seconds (the server closes them cleanly) and are resumed from
  // the last resourceVersion; randomised per watch between it and twice it, like client-go.
  int watchTimeoutSeconds = 300;
  // Told when the watch becomes unavailable (and why) and when it is restored: for the log.
  std::function<void(const std::string&)> onWatchProblem;
};

class LeaseClient : public election::LeaseStore {
 public:
  LeaseClient(ApiTransport& api, time::Clock& clock, LeaseTarget target, LeaseClientOptions options,
              std::function<double()> random01);
  ~LeaseClient() override;

  void get(election::StoreCallback done) override;
  void create(const election::LeaseRecord& record, election::StoreCallback done) override;
  void update(const election::LeaseRecord& record, election::StoreCallback done) override;
  void watch(election::LeaseObserver* observer) override;

  const LeaseTarget& target() const { return target_; }
  std::string collectionPath() const;
  std::string objectPath() const;

  // Maps an answer to VERB ("get", "create", "update") onto the election's outcomes; a refusal's
  // message ends with the hint of kube::refusalHint (exposed for tests).
  static election::StoreResult classify(const ApiResponse& r, const std::string& verb);

 private:
  void decodeInto(ApiResponse r, const std::string& verb, election::StoreCallback done);

  ApiTransport& api_;
  time::Clock& clock_;
  LeaseTarget target_;
  LeaseClientOptions options_;
  std::function<double()> random01_;
  std::unique_ptr<LeaseWatch> watch_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube

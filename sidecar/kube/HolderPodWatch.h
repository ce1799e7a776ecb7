#pragma once
// election::HolderExitWitness on the Kubernetes API (--fast-failover): follows the pod that a
// Lease's holder recorded (leasehold.io/holder-pod and -process) with a LIST and WATCH of that
// one pod (field selector metadata.name, ListWatchLoop), judges every report of it with
// HolderExitRule, and tells the Elector once the rule finds proof that the holder's process
// exited. A follower watches only the current holder's pod; a pod it may not read (no RBAC
// grant) or cannot watch is no proof, and the Lease's expiry decides as without the flag.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "election/lease/HolderExitWitness.h"
#include "kube/ApiTransport.h"
#include "kube/HolderExitRule.h"
#include "kube/ListWatchLoop.h"
#include "kube/PodFacts.h"
#include "time/Clock.h"

namespace leasehold::kube {

struct HolderPodWatchOptions {
  std::string podNamespace;  // where the holders' pods are: this replica's own namespace
  OwnContainer self;
  std::chrono::milliseconds requestDeadline{5000};
  int watchTimeoutSeconds = 300;
  // For the log: why the holder's exit is no proof yet, said when it changes, the
  // proof (info), and a pod watch that is refused or broken (warn).
  std::function<void(const std::string&)> onVerdict;
  std::function<void(const std::string&)> onProof;
  std::function<void(const std::string&)> onProblem;
};

class HolderPodWatch : public election::HolderExitWitness {
 public:
  HolderPodWatch(ApiTransport& api, time::Clock& clock, HolderPodWatchOptions options,
                 std::function<double()> random01);
  ~HolderPodWatch() override;
  HolderPodWatch(const HolderPodWatch&) = delete;
  HolderPodWatch& operator=(const HolderPodWatch&) = delete;

  void follow(const election::LeaseRecord& record,
              std::function<void(std::string proof)> exited) override;
  void unfollow() override;

 private:
  void watchPod(const std::string& name);
  void judge();

  ApiTransport& api_;
  time::Clock& clock_;
  HolderPodWatchOptions options_;
  std::function<double()> random01_;
  std::unique_ptr<time::Timer> judgeTimer_;  // follow() never calls back from inside
  std::unique_ptr<ListWatchLoop> loop_;      // the followed pod's, while there is one
  std::string podName_;
  bool podKnown_ = false;  // the list answered
  std::optional<PodFacts> pod_;
  std::optional<election::LeaseRecord> record_;
  std::function<void(std::string)> exited_;
  std::string lastWhy_;
};

}  // namespace leasehold::kube

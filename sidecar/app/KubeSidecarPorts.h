#pragma once
// The production ports of one Sidecar on a Kubernetes Lease: its candidacy (kube::LeaseElection
// on kube::LeaseClient, with the watch, and --fast-failover's kube::HolderPodWatch), Kubernetes
// Events through kube::EventRecorder, --pod-label through kube::PodLabeler, and --status-file
// through publish::StatusFileWriter (on the runtime::BlockingWorker). Everything one Lease needs
// and nothing shared.
#include <functional>
#include <optional>
#include <string>

#include "app/ApiConnections.h"
#include "election/lease/Elector.h"
#include "kube/HolderExitRule.h"
#include "kube/PodLabeler.h"
#include "lock/Sidecar.h"
#include "log/Logger.h"
#include "time/Clock.h"

namespace leasehold::runtime {
class BlockingWorker;
}

namespace leasehold::app {

struct KubeSidecarSetup {
  std::string leaseNamespace;
  std::string leaseName;
  std::string identity;
  std::string podName;  // POD_NAME (holder annotation), may be empty
  std::string podIp;    // POD_IP (holder annotation), may be empty
  // The renewal connection's requests end by this deadline (well inside R).
  std::chrono::milliseconds requestDeadline{5000};
  // Events and the pod label: their own deadline (they never delay a renewal).
  std::chrono::milliseconds sideRequestDeadline{5000};
  int watchTimeoutSeconds = 300;
  // --pod-label: the label key and the pod; nullopt when not asked for.
  std::optional<std::pair<std::string, kube::PodRef>> podLabel;
  std::string statusFile;  // --status-file, empty for none
  // --fast-failover: this replica's pod and container; nullopt when not asked for.
  std::optional<kube::OwnPod> fastFailover;
};

// The ports (the election built with `elector`: the SidecarConfig's candidate and the Lease's
// own settings), except
// leadershipMayHaveChanged (the status server's, set by the caller). Status file writes run on
// `worker`, their results back on the loop; everything else runs on the loop.
lock::SidecarPorts makeKubeSidecarPorts(const KubeSidecarSetup& setup,
                                        const election::ElectorConfig& elector, ApiConnections& api,
                                        time::Clock& clock, runtime::BlockingWorker& worker,
                                        const log::Logger& logger,
                                        std::function<double()> random01);

}  // namespace leasehold::app

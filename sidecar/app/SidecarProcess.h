#pragma once
// The process for one Lease (leasehold, and leasehold run -- CMD): one lock::Sidecar on the
// ProcessRuntime with its Kubernetes ports (app/KubeSidecarPorts), the status API (/leader,
// /leader/watch, /release), the probes, --coordinated's LeaseCandidate, run mode's supervised
// command (lock/RunMode), and SIGTERM/SIGINT starting the Sidecar's shutdown. ShardProcess is
// its counterpart for --shards N.
#include <optional>
#include <string>

#include "cluster/RestConfig.h"
#include "config/Config.h"
#include "kube/HolderExitRule.h"
#include "kube/PodLabeler.h"
#include "log/Logger.h"

namespace leasehold::app {

struct SidecarProcessInputs {
  const config::Config& config;
  const cluster::RestConfig& rest;
  std::string leaseNamespace;               // resolved: --lease-namespace, the pod's, "default"
  std::string podIp;                        // POD_IP (holder annotation), may be empty
  std::optional<int> watchTimeoutSeconds;   // the test hook, when set
  std::optional<kube::PodRef> labelledPod;  // --pod-label's pod, when --pod-label is set
  // --fast-failover: this replica's pod ($POD_NAME, $POD_UID) and container
  // ($LEASEHOLD_CONTAINER), in the namespace where the other holders' pods are (its own).
  std::optional<kube::OwnPod> fastFailover;
};

// Runs until the shutdown completes; returns the exit status (2 when it could not start, after
// printing why; in run mode RunMode::exitCode()).
int runSidecarProcess(const SidecarProcessInputs& in, const log::Logger& logger);

}  // namespace leasehold::app

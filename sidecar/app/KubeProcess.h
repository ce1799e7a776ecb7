#pragma once
// The process on Kubernetes (the default store; leasehold, and leasehold run -- CMD): reads
// the cluster access (in-cluster or kubeconfig), resolves the Lease's namespace and the pod
// facts the flags need from the downward API (POD_NAMESPACE, POD_NAME, POD_UID, POD_IP,
// LEASEHOLD_CONTAINER), then hands over to app/SidecarProcess for one Lease or app/ShardProcess
// for --shards N. app/EtcdProcess is its counterpart on etcd; main.cpp only picks one.
#include "config/Config.h"
#include "config/ConfigLoader.h"
#include "log/Logger.h"

namespace leasehold::app {

// Runs until the shutdown completes; returns the exit status (2, after printing why, when the
// cluster access cannot be read or a flag's pod fact is missing; in run mode
// RunMode::exitCode()).
int runKubeProcess(const config::Config& cfg, const config::ConfigLoader::Environment& env,
                   const log::Logger& logger);

}  // namespace leasehold::app

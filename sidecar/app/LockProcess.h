#pragma once
// The process for one lock, whatever store keeps it: one lock::Sidecar on the LoopRuntime with
// the store's ports, the status API (/leader, /leader/watch, /release), the probes, run mode's
// supervised command (lock/RunMode) and SIGTERM/SIGINT starting the Sidecar's shutdown. The
// store's process (app/SidecarProcess on a Kubernetes Lease, app/EtcdProcess on etcd)
// builds its ports and hands them here with the few things that differ.
#include <functional>

#include "app/ProcessRuntime.h"
#include "config/Config.h"
#include "lock/Sidecar.h"
#include "log/Logger.h"

namespace leasehold::app {

struct LockStore {
  lock::SidecarPorts ports;  // leadershipMayHaveChanged and command are set here
  // /readyz: whether the store has answered anything yet.
  std::function<bool()> answered;
  // Runs before the Sidecar's shutdown and calls its argument when done (--coordinated's
  // LeaseCandidate goes first); empty: nothing.
  std::function<void(std::function<void()> then)> beforeShutdown;
  std::function<void()> start;     // after the servers listen, before the Sidecar; may be empty
  std::function<void()> shutdown;  // closes the store's connections, at the very end
  log::Fields starting;            // the "starting" line's fields that name the store
};

// Runs until the shutdown completes; returns the exit status (2 when it could not start, after
// printing why; in run mode RunMode::exitCode()).
int serveLock(LoopRuntime& rt, const config::Config& cfg, lock::SidecarConfig sidecarConfig,
              LockStore store, const log::Logger& logger);

}  // namespace leasehold::app

#pragma once
// What --fast-failover's rule (HolderExitRule.h) reads from a core/v1 Pod: its identity, whether
// it is going away, whether its containers share a process namespace with anything, and each
// container's state as the kubelet last reported it (regular and init containers alike: a
// native sidecar is an init container). Decoding never throws: a malformed body gives false and
// a message naming the field path.
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "time/Time.h"

namespace leasehold::kube {

// A containerStatuses[].state.terminated or .lastState.terminated record.
struct ContainerExit {
  std::optional<time::WallTime> finishedAt;  // the node's clock, whole seconds
  std::string reason;                        // "Error", "OOMKilled", "ContainerStatusUnknown"...
  int exitCode = 0;
};

struct ContainerFacts {
  // Its spec sets LEASEHOLD_CONTAINER to its own name (the chart's does): the container a
  // holder names is its own, not a typo for another one whose exit would prove nothing.
  bool namesItself = false;
  bool running = false;                         // state.running
  std::optional<ContainerExit> terminated;      // state.terminated
  std::optional<ContainerExit> lastTerminated;  // lastState.terminated
};

struct PodFacts {
  std::string name;
  std::string uid;
  bool deleting = false;               // metadata.deletionTimestamp is set
  std::string phase;                   // status.phase
  bool shareProcessNamespace = false;  // spec.shareProcessNamespace
  bool hostPid = false;                // spec.hostPID
  // By name, from both status lists and both spec lists (a container in the spec only has no
  // state yet).
  std::map<std::string, ContainerFacts> containers;
};

bool decodePodFacts(std::string_view json, PodFacts& out, std::string& error);
// The first item of a PodList (a field-selected list names one pod or none), and the list's
// resourceVersion to watch from.
bool decodePodListFacts(std::string_view json, std::optional<PodFacts>& out,
                        std::string& resourceVersion, std::string& error);

}  // namespace leasehold::kube

#pragma once
// What the election reads from and writes to a coordination.k8s.io/v1 Lease.
#include <compare>
#include <cstdint>
#include <optional>
#include <string>

#include "election/Identity.h"
#include "time/Time.h"

namespace leasehold::election {

// A strong type, as Identity is. Opaque: only compared for equality, never ordered or parsed.
struct ResourceVersion {
  std::string value;
  bool empty() const { return value.empty(); }
  bool operator==(const ResourceVersion&) const = default;
};

struct LeaseRecord {
  std::string holderIdentity;  // "" = released / nobody
  std::optional<std::int32_t> leaseDurationSeconds;
  std::optional<time::WallTime> acquireTime;
  std::optional<time::WallTime> renewTime;
  std::int32_t leaseTransitions = 0;
  ResourceVersion resourceVersion;
  // From the holder's annotations (leasehold.io/holder-pod, leasehold.io/holder-address): for
  // display only. Writers fill them from their own pod.
  std::string holderPod;
  std::string holderAddress;
  // Where the holder's process runs (leasehold.io/holder-process, "<pod UID>/<container>/
  // <identity>", written by holders that know both): what a fast-failover follower asks the
  // kubelet's pod status about. The election passes it on without reading it.
  std::string holderProcess;
  // A handover request: spec.preferredHolder where the server keeps it, else the annotation
  // leasehold.io/preferred-holder (an identity or a pod name; "" = none). Written by operators;
  // the election only ever clears it (the new holder does), so it is not part of sameSpec().
  std::string preferredHolder;
  // The whole object as the server last sent it (JSON text). The election never looks inside;
  // the Kubernetes client starts every write from it so fields, labels and annotations it does
  // not own survive (read-modify-write).
  std::string opaque;

  bool heldBy(const Identity& id) const { return holderIdentity == id.value; }
  // The spec fields the election owns, for comparing what was sent with what was read.
  bool sameSpec(const LeaseRecord& o) const {
    return holderIdentity == o.holderIdentity && leaseDurationSeconds == o.leaseDurationSeconds &&
           acquireTime == o.acquireTime && renewTime == o.renewTime &&
           leaseTransitions == o.leaseTransitions;
  }
};

}  // namespace leasehold::election

#pragma once
// --fast-failover's rule (docs/design.md, "Fast failover"): when the kubelet's word that a
// Lease holder's process exited is proof that it claims nothing any more, so that a follower
// may take over before the Lease expires. Pure: the Lease as observed and the holder's pod as
// last reported in, a verdict out, so that every case is a row of a unit test table.
//
// Proof needs all of: the holder recorded its process (leasehold.io/holder-process, with the
// Lease's own holderIdentity in it); the pod of that name has that UID, is not being deleted
// and its phase is not Failed; the pod shares no process namespace (spec.shareProcessNamespace,
// spec.hostPID: else a process the holder started outlives its container); the holder's
// container sets LEASEHOLD_CONTAINER to its own name in the spec (a holder told the wrong name
// would name a container whose exit says nothing about it); and either the
// holder's container is this replica's own (a container runs one instance at a time, so the
// holder was an earlier one), or the container is not running and its latest terminated
// record has a reason other than ContainerStatusUnknown (which the kubelet invents without
// seeing an exit) and a finishedAt at or after the term's acquireTime.
//
// Why acquireTime: the holder wrote it while alive, on the same node's clock as finishedAt, so
// an exit at or after it is the holder's own or a later instance's, never an earlier one's
// (a status not yet updated after a restart). finishedAt has whole seconds, rounded down: it
// is compared as written, so the test can only err towards waiting (a crash in the second of
// the acquisition waits for the expiry). The last renewTime would do the same but fail for a
// crash in the same second as the last renewal, which is most crashes at P = 2 s.
#include <optional>
#include <string>
#include <string_view>

#include "election/lease/LeaseRecord.h"
#include "kube/PodFacts.h"

namespace leasehold::kube {

// leasehold.io/holder-process, parsed: "<pod UID>/<container>/<identity>".
struct HolderProcess {
  std::string podUid;
  std::string container;
  std::string identity;
};
std::optional<HolderProcess> parseHolderProcess(std::string_view annotation);
// A pod name as the API server makes them (a DNS-1123 subdomain's characters, at most 253): the
// Lease's annotations are anyone's to write, and the name goes into a request's query.
bool isPodName(std::string_view name);

// Where this replica's own process runs.
struct OwnContainer {
  std::string podUid;
  std::string container;
};
// The same with the pod's name and namespace: what --fast-failover is started with.
struct OwnPod {
  std::string ns;
  std::string name;
  OwnContainer container;
};

struct ExitVerdict {
  bool proven = false;
  std::string why;  // the proof, or why this is no proof (for the log)
};

// `pod` is the holder's pod as last reported (nullopt: no pod of the holder's name).
ExitVerdict judgeHolderExit(const election::LeaseRecord& lease, const std::optional<PodFacts>& pod,
                            const OwnContainer& self);

}  // namespace leasehold::kube

#include "kube/HolderExitRule.h"

#include "time/Time.h"

namespace leasehold::kube {

namespace {
ExitVerdict wait(std::string why) {
  return {false, std::move(why)};
}
}  // namespace

std::optional<HolderProcess> parseHolderProcess(std::string_view s) {
  const auto first = s.find('/');
  if (first == std::string_view::npos) return std::nullopt;
  const auto second = s.find('/', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  HolderProcess p{std::string(s.substr(0, first)),
                  std::string(s.substr(first + 1, second - first - 1)),
                  std::string(s.substr(second + 1))};
  if (p.podUid.empty() || p.container.empty() || p.identity.empty()) return std::nullopt;
  return p;
}

bool isPodName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return true;
}

ExitVerdict judgeHolderExit(const election::LeaseRecord& lease, const std::optional<PodFacts>& pod,
                            const OwnContainer& self) {
  const auto holder = parseHolderProcess(lease.holderProcess);
  if (!holder || lease.holderPod.empty()) {
    return wait("the holder " + lease.holderIdentity +
                " did not record its pod and container (leasehold.io/holder-process): no "
                "fast failover for it");
  }
  if (!isPodName(lease.holderPod)) {
    return wait("leasehold.io/holder-pod \"" + lease.holderPod + "\" is not a pod name");
  }
  if (holder->identity != lease.holderIdentity) {
    return wait("leasehold.io/holder-process names " + holder->identity + ", not the holder " +
                lease.holderIdentity);
  }
  const std::string where = "container " + holder->container + " of pod " + lease.holderPod;
  if (!pod) return wait("no pod " + lease.holderPod + ": a pod object gone is no proof");
  if (pod->uid != holder->podUid) {
    return wait("pod " + lease.holderPod + " has UID " + pod->uid + ", not the holder's " +
                holder->podUid + ": the holder's pod object is gone, which is no proof");
  }
  if (pod->deleting) {
    return wait("pod " + lease.holderPod +
                " is being deleted: its processes run through the grace period");
  }
  if (pod->shareProcessNamespace || pod->hostPid) {
    return wait("pod " + lease.holderPod + " has " +
                (pod->hostPid ? "hostPID" : "shareProcessNamespace") +
                ": a process the holder started can outlive its container, so its exit is no "
                "proof (no fast failover for this holder)");
  }
  const auto c = pod->containers.find(holder->container);
  if (c == pod->containers.end())
    return wait("no container " + holder->container + " in pod " + lease.holderPod);
  if (!c->second.namesItself) {
    return wait(where + " does not set LEASEHOLD_CONTAINER=" + holder->container +
                ": the holder may have named another container than its own");
  }
  if (holder->podUid == self.podUid && holder->container == self.container) {
    return {true, "the holder ran in this replica's own container (" + where +
                      ") before this process: a container runs one instance at a time"};
  }
  if (pod->phase == "Failed") return wait("pod " + lease.holderPod + " is Failed: no proof");
  if (c->second.running) return wait(where + " is running");
  const auto& exit = c->second.terminated ? c->second.terminated : c->second.lastTerminated;
  if (!exit) return wait(where + " is not running and has no terminated record");
  if (exit->reason == "ContainerStatusUnknown") {
    return wait(where + " has reason ContainerStatusUnknown: the kubelet saw no exit");
  }
  if (!exit->finishedAt || !lease.acquireTime) {
    return wait(where + " exited, but " +
                (exit->finishedAt ? "the Lease has no acquireTime" : "with no finishedAt"));
  }
  if (*exit->finishedAt < *lease.acquireTime) {
    return wait(where + "'s last exit (" + time::formatMicroTime(*exit->finishedAt) +
                ") is older than the holder's term (acquired " +
                time::formatMicroTime(*lease.acquireTime) +
                "): an earlier instance, or a status not updated yet");
  }
  return {true, where + " exited at " + time::formatMicroTime(*exit->finishedAt) + " (" +
                    (exit->reason.empty() ? std::string("no reason") : exit->reason) +
                    ", exit code " + std::to_string(exit->exitCode) +
                    "), after the holder's term began"};
}

}  // namespace leasehold::kube

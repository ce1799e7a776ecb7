#include "app/KubeSidecarPorts.h"

#include <memory>

#include "app/StatusFilePorts.h"
#include "kube/EventRecorder.h"
#include "kube/HolderPodWatch.h"
#include "kube/LeaseClient.h"
#include "kube/LeaseElection.h"

namespace leasehold::app {

lock::SidecarPorts makeKubeSidecarPorts(const KubeSidecarSetup& setup,
                                        const election::ElectorConfig& elector, ApiConnections& api,
                                        time::Clock& clock, runtime::BlockingWorker& worker,
                                        const log::Logger& logger,
                                        std::function<double()> random01) {
  lock::SidecarPorts ports;
  kube::LeaseClientOptions leaseOptions;
  leaseOptions.requestDeadline = setup.requestDeadline;
  leaseOptions.watchTimeoutSeconds = setup.watchTimeoutSeconds;
  leaseOptions.onWatchProblem = [&logger](const std::string& what) { logger.warn(what); };
  kube::LeaseTarget target{setup.leaseName, setup.leaseNamespace, setup.podName, setup.podIp};
  std::unique_ptr<kube::HolderPodWatch> witness;
  if (setup.fastFailover) {
    target.podUid = setup.fastFailover->container.podUid;
    target.container = setup.fastFailover->container.container;
    kube::HolderPodWatchOptions o;
    o.podNamespace = setup.fastFailover->ns;
    o.self = setup.fastFailover->container;
    o.requestDeadline = setup.sideRequestDeadline;
    o.watchTimeoutSeconds = setup.watchTimeoutSeconds;
    o.onVerdict = [&logger](const std::string& why) {
      logger.info("fast failover: no proof yet", {{"why", why}});
    };
    o.onProof = [&logger](const std::string& proof) {
      logger.info("fast failover: the holder's process exited", {{"proof", proof}});
    };
    o.onProblem = [&logger](const std::string& what) { logger.warn(what); };
    // On the side connection: a pod watch never queues in front of a renewal.
    witness = std::make_unique<kube::HolderPodWatch>(api.side(), clock, std::move(o), random01);
  }
  auto election = std::make_unique<kube::LeaseElection>(
      clock,
      std::make_unique<kube::LeaseClient>(api.lease(), clock, std::move(target), leaseOptions,
                                          random01),
      elector, random01, std::move(witness));
  // The Events name the Lease as the election last saw it; the Sidecar owns both the election
  // and this port, so the pointer lives as long as the port can be called.
  const kube::LeaseElection* seen = election.get();
  ports.candidacy = std::move(election);

  auto events = std::make_shared<kube::EventRecorder>(
      api.side(), clock,
      kube::LeaseEventTarget{setup.leaseName, setup.leaseNamespace, setup.identity},
      kube::EventRecorderOptions{16, setup.sideRequestDeadline});
  events->setFailureHandler([&logger](const std::string& why) { logger.warn(why); });
  ports.events = {[events, seen](std::string message) {
                    events->record(seen->lastSeenLease(), std::move(message));
                  },
                  [events](auto budget, auto done) { events->drain(budget, std::move(done)); }};

  if (setup.podLabel) {
    const auto& [key, pod] = *setup.podLabel;
    auto labeler = std::make_shared<kube::PodLabeler>(
        api.side(), clock, pod, key, random01,
        kube::PodLabelerOptions{std::chrono::milliseconds(500), std::chrono::seconds(30),
                                setup.sideRequestDeadline});
    labeler->setFailureHandler([&logger](const std::string& why) { logger.warn(why); });
    labeler->setAppliedHandler([&logger, key, pod](bool value) {
      logger.info("pod label set", {{"pod", pod.ns + "/" + pod.name},
                                    {"label", key + "=" + (value ? "true" : "false")}});
    });
    ports.podLabel = {
        [labeler](bool leads) { labeler->set(leads); },
        [labeler](auto budget, auto done) { labeler->drain(budget, std::move(done)); }};
  }

  if (!setup.statusFile.empty()) ports.statusFile = makeStatusFilePort(setup.statusFile, worker);
  return ports;
}

}  // namespace leasehold::app

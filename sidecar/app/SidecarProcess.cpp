#include "app/SidecarProcess.h"

#include <memory>

#include "app/ComponentSettings.h"
#include "app/KubeSidecarPorts.h"
#include "app/LockProcess.h"
#include "app/ProcessRuntime.h"
#include "config/Config.h"
#include "kube/LeaseCandidate.h"
#include "kube/LeaseLockName.h"
#include "lock/Sidecar.h"

namespace leasehold::app {

namespace {

KubeSidecarSetup kubeSetup(const SidecarProcessInputs& in) {
  const auto& cfg = in.config;
  KubeSidecarSetup setup;
  setup.leaseNamespace = in.leaseNamespace;
  setup.leaseName = cfg.leaseName;
  setup.identity = cfg.identity;
  setup.podName = cfg.podName;
  setup.podIp = in.podIp;
  setup.requestDeadline = renewalRequestDeadline(cfg.timings);
  setup.statusFile = cfg.statusFile;
  if (in.watchTimeoutSeconds) setup.watchTimeoutSeconds = *in.watchTimeoutSeconds;
  if (in.labelledPod) setup.podLabel = {{cfg.podLabel, *in.labelledPod}};
  setup.fastFailover = in.fastFailover;
  return setup;
}

lock::SidecarConfig sidecarConfig(const config::Config& cfg, const publish::LeaseName& lease) {
  lock::SidecarConfig c{
      {election::Identity{cfg.identity}, cfg.timings}, lease, cfg.releaseCooldown};
  c.alias = cfg.podName;  // a handover request may name the pod instead
  return c;
}

// The Elector's settings: the candidate's, and how a Lease is followed and --coordinated.
election::ElectorConfig electorConfig(const config::Config& cfg) {
  election::ElectorConfig c{election::Identity{cfg.identity}, cfg.timings,
                            cfg.followerMode == config::FollowerMode::Poll
                                ? election::FollowerMode::kPoll
                                : election::FollowerMode::kWatch};
  c.coordinated = cfg.coordinated;
  return c;
}

// --coordinated: this replica's LeaseCandidate, on the side connection (never in front of a
// renewal).
std::unique_ptr<kube::LeaseCandidate> leaseCandidate(const config::Config& cfg,
                                                     const KubeSidecarSetup& setup,
                                                     ProcessRuntime& rt,
                                                     const log::Logger& logger) {
  if (!cfg.coordinated) return nullptr;
  kube::LeaseCandidateOptions options;
  options.requestDeadline = setup.requestDeadline;
  auto candidate = std::make_unique<kube::LeaseCandidate>(
      rt.api.side(), rt.clock,
      kube::LeaseCandidateSpec{setup.leaseNamespace, cfg.identity, cfg.leaseName,
                               config::announcedVersion(cfg), "", "OldestEmulationVersion"},
      rt.random01(), options);
  candidate->setProblemHandler([&logger](const std::string& p) { logger.warn(p); });
  return candidate;
}

}  // namespace

int runSidecarProcess(const SidecarProcessInputs& in, const log::Logger& logger) {
  const auto& cfg = in.config;
  ProcessRuntime rt(in.rest, logger);
  const KubeSidecarSetup setup = kubeSetup(in);
  lock::SidecarConfig sidecarSettings =
      sidecarConfig(cfg, kube::leaseLockName(setup.leaseNamespace, setup.leaseName));
  LockStore store;
  store.ports = makeKubeSidecarPorts(setup, electorConfig(cfg), rt.api, rt.clock, rt.worker, logger,
                                     rt.random01());
  store.answered = [&rt] { return rt.api.answered(); };
  // The LeaseCandidate is deleted before the release on the way out, so that the controller
  // does not name a replica that is leaving (unless its candidate cache trails its Lease cache:
  // docs/design.md).
  auto candidate = leaseCandidate(cfg, setup, rt, logger);
  if (candidate) {
    store.beforeShutdown = [&candidate](std::function<void()> then) {
      candidate->stop(std::move(then));
    };
    store.start = [&candidate] { candidate->start(); };
  }
  store.shutdown = [&rt] { rt.api.shutdown(); };
  store.starting = {{"lease", setup.leaseNamespace + "/" + setup.leaseName},
                    {"server", in.rest.server},
                    {"access", in.rest.source}};
  return serveLock(rt, cfg, std::move(sidecarSettings), std::move(store), logger);
}

}  // namespace leasehold::app

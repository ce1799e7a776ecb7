#include "app/SidecarProcess.h"

#include <memory>

#include "app/ComponentSettings.h"
#include "app/KubeSidecarPorts.h"
#include "app/ProcessRuntime.h"
#include "app/ProcessSignals.h"
#include "app/RunMode.h"
#include "app/Sidecar.h"
#include "kube/LeaseCandidate.h"
#include "publish/ProbeServer.h"
#include "publish/StatusServer.h"

namespace leasehold::app {

namespace {

KubeSidecarSetup kubeSetup(const SidecarProcessInputs& in) {
  const auto& cfg = in.config;
  KubeSidecarSetup setup;
  setup.lease = {in.leaseNamespace, cfg.leaseName};
  setup.identity = cfg.identity;
  setup.podName = cfg.podName;
  setup.podIp = in.podIp;
  setup.requestDeadline = renewalRequestDeadline(cfg.timings);
  setup.statusFile = cfg.statusFile;
  if (in.watchTimeoutSeconds) setup.watchTimeoutSeconds = *in.watchTimeoutSeconds;
  if (in.labelledPod) setup.podLabel = {{cfg.podLabel, *in.labelledPod}};
  return setup;
}

SidecarConfig sidecarConfig(const config::Config& cfg, const publish::LeaseName& lease) {
  SidecarConfig c{{election::Identity{cfg.identity}, cfg.timings,
                   cfg.followerMode == config::FollowerMode::Poll ? election::FollowerMode::kPoll
                                                                  : election::FollowerMode::kWatch},
                  lease,
                  cfg.releaseCooldown};
  c.alias = cfg.podName;  // a handover request may name the pod instead
  c.elector.coordinated = cfg.coordinated;
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
      kube::LeaseCandidateSpec{setup.lease.ns, cfg.identity, cfg.leaseName,
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
  SidecarConfig sidecarSettings = sidecarConfig(cfg, setup.lease);
  auto ports = makeKubeSidecarPorts(setup, sidecarSettings.elector, rt.api, rt.clock, rt.worker,
                                    logger, rt.random01());
  std::unique_ptr<RunMode> runMode;
  if (cfg.runMode) {
    auto started = RunMode::start(rt.io, rt.clock, supervisorConfigFor(cfg, setup.lease), logger);
    if (auto* problem = std::get_if<std::string>(&started)) return failToStart(*problem);
    runMode = std::move(std::get<std::unique_ptr<RunMode>>(started));
    ports.command = runMode->port();
  }
  std::optional<publish::StatusServer> status;
  ports.leadershipMayHaveChanged = [&status] {
    if (status) status->leadershipMayHaveChanged();
  };
  Sidecar sidecar(std::move(sidecarSettings), std::move(ports), rt.metrics, logger);

  status.emplace(rt.io, net::HttpServer::Options{cfg.httpAddress.host, cfg.httpAddress.port},
                 rt.clock, setup.lease,
                 publish::StatusSource{[&sidecar] { return sidecar.leadership(); },
                                       [&sidecar] { sidecar.release(); }, cfg.releaseCooldown});
  if (auto err = status->listen())
    return failToStart("--http-address " + cfg.httpAddress.toString() + ": " + *err);
  if (auto problem = sidecar.writeInitialStatusFile())
    return failToStart("--status-file: " + *problem);
  publish::ProbeServer probes(
      rt.io, net::HttpServer::Options{cfg.probeAddress.host, cfg.probeAddress.port}, rt.metrics,
      {[&sidecar] { return sidecar.leadership(); },
       [&sidecar] { return sidecar.unhealthyReason(); }, [&rt] { return rt.api.answered(); }});
  if (auto err = probes.listen())
    return failToStart("--probe-address " + cfg.probeAddress.toString() + ": " + *err);

  // The LeaseCandidate is deleted before the release on the way out, so that the controller
  // cannot name a replica that is leaving.
  auto candidate = leaseCandidate(cfg, setup, rt, logger);
  const auto shutdownSidecar = [&](std::function<void()> finished) {
    if (!candidate) return (void)sidecar.shutdown(std::move(finished));
    candidate->stop([&sidecar, finished = std::move(finished)]() mutable {
      sidecar.shutdown(std::move(finished));
    });
  };
  const auto stopEverything = [&] {
    status->stop();
    probes.stop();
    rt.api.shutdown();
    rt.io.stop();
  };
  ProcessSignals<RunMode> signals(rt.io, logger, runMode.get(), shutdownSidecar, stopEverything);

  logger.info("starting", {{"identity", cfg.identity},
                           {"lease", setup.lease.ns + "/" + setup.lease.name},
                           {"server", in.rest.server},
                           {"access", in.rest.source},
                           {"status", cfg.httpAddress.host + ":" + std::to_string(status->port())},
                           {"probes", cfg.probeAddress.host + ":" + std::to_string(probes.port())},
                           {"leaseDuration", time::formatDuration(cfg.timings.leaseDuration)},
                           {"renewDeadline", time::formatDuration(cfg.timings.renewDeadline)},
                           {"retryPeriod", time::formatDuration(cfg.timings.retryPeriod)},
                           {"mode", cfg.runMode ? "run" : "sidecar"},
                           {"coordinated", cfg.coordinated ? "true" : "false"}});
  if (candidate) candidate->start();
  sidecar.start();
  rt.run();
  const int code = runMode ? runMode->exitCode() : 0;
  logger.info("stopped", {{"exitCode", std::to_string(code)}});
  return code;
}

}  // namespace leasehold::app

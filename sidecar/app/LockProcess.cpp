#include "app/LockProcess.h"

#include <memory>
#include <optional>

#include "app/ComponentSettings.h"
#include "app/ProcessSignals.h"
#include "lock/RunMode.h"
#include "publish/ProbeServer.h"
#include "publish/StatusServer.h"

namespace leasehold::app {

int serveLock(LoopRuntime& rt, const config::Config& cfg, lock::SidecarConfig sidecarConfig,
              LockStore store, const log::Logger& logger) {
  const publish::LeaseName lease = sidecarConfig.lease;
  std::unique_ptr<lock::RunMode> runMode;
  if (cfg.runMode) {
    auto started =
        lock::RunMode::start(rt.io, rt.clock, {{supervisorConfigFor(cfg, lease), {}}}, logger);
    if (auto* problem = std::get_if<std::string>(&started)) return failToStart(*problem);
    runMode = std::move(std::get<std::unique_ptr<lock::RunMode>>(started));
    store.ports.command = runMode->port();
  }
  std::optional<publish::StatusServer> status;
  store.ports.leadershipMayHaveChanged = [&status] {
    if (status) status->leadershipMayHaveChanged();
  };
  lock::Sidecar sidecar(std::move(sidecarConfig), std::move(store.ports), rt.metrics, logger);

  status.emplace(rt.io, net::HttpServer::Options{cfg.httpAddress.host, cfg.httpAddress.port},
                 rt.clock, lease,
                 publish::StatusSource{[&sidecar] { return sidecar.leadership(); },
                                       [&sidecar] { sidecar.release(); }, cfg.releaseCooldown});
  if (auto err = status->listen())
    return failToStart("--http-address " + cfg.httpAddress.toString() + ": " + *err);
  if (auto problem = sidecar.writeInitialStatusFile())
    return failToStart("--status-file: " + *problem);
  publish::ProbeServer probes(
      rt.io, net::HttpServer::Options{cfg.probeAddress.host, cfg.probeAddress.port}, rt.metrics,
      {[&sidecar] { return sidecar.leadership(); },
       [&sidecar] { return sidecar.unhealthyReason(); }, store.answered});
  if (auto err = probes.listen())
    return failToStart("--probe-address " + cfg.probeAddress.toString() + ": " + *err);

  const auto shutdownSidecar = [&](std::function<void()> finished) {
    if (!store.beforeShutdown) return (void)sidecar.shutdown(std::move(finished));
    store.beforeShutdown([&sidecar, finished = std::move(finished)]() mutable {
      sidecar.shutdown(std::move(finished));
    });
  };
  const auto stopEverything = [&] {
    status->stop();
    probes.stop();
    store.shutdown();
    rt.io.stop();
  };
  ProcessSignals<lock::RunMode> signals(rt.io, logger, runMode.get(), shutdownSidecar,
                                        stopEverything);

  log::Fields fields{{"identity", cfg.identity}};
  fields.insert(fields.end(), store.starting.begin(), store.starting.end());
  fields.insert(fields.end(),
                {{"status", cfg.httpAddress.host + ":" + std::to_string(status->port())},
                 {"probes", cfg.probeAddress.host + ":" + std::to_string(probes.port())},
                 {"leaseDuration", time::formatDuration(cfg.timings.leaseDuration)},
                 {"renewDeadline", time::formatDuration(cfg.timings.renewDeadline)},
                 {"retryPeriod", time::formatDuration(cfg.timings.retryPeriod)},
                 {"renewInterval", time::formatDuration(cfg.timings.renewEvery())},
                 {"mode", cfg.runMode ? "run" : "sidecar"}});
  if (cfg.store == config::Store::Kubernetes) {
    fields.emplace_back("coordinated", cfg.coordinated ? "true" : "false");
  }
  logger.info("starting", fields);
  if (store.start) store.start();
  sidecar.start();
  rt.run();
  const int code = runMode ? runMode->exitCode() : 0;
  logger.info("stopped", {{"exitCode", std::to_string(code)}});
  return code;
}

}  // namespace leasehold::app

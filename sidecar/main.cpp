// leasehold: reads the configuration, wires Kubernetes access, one Sidecar and the status and
// probe servers onto one event loop, and handles signals. The policy lives in app/Sidecar, the
// per-Lease wiring in app/KubeSidecarPorts, run mode's (leasehold run -- CMD) in app/RunMode.
#include <signal.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <iostream>
#include <random>

#include "app/ApiConnections.h"
#include "app/KubeSidecarPorts.h"
#include "app/RunMode.h"
#include "app/RunModeSignals.h"
#include "app/ShardProcess.h"
#include "app/Sidecar.h"
#include "app/SignalShutdown.h"
#include "cluster/RestConfigLoader.h"
#include "config/ConfigLoader.h"
#include "config/ConfigPrinter.h"
#include "kube/LeaseCandidate.h"
#include "log/Logger.h"
#include "publish/Metrics.h"
#include "publish/ProbeServer.h"
#include "publish/StatusServer.h"
#include "runtime/AsioClock.h"
#include "runtime/BlockingWorker.h"
#include "runtime/ResidentCode.h"
#include "runtime/WatchTimeoutHook.h"
#include "supervise/WatchdogOrder.h"
#include "supervise/WatchdogProcess.h"

namespace lh = leasehold;

namespace {

std::string envOr(const lh::config::ConfigLoader::Environment& env, const char* key,
                  std::string fallback = "") {
  auto it = env.find(key);
  return it == env.end() || it->second.empty() ? fallback : it->second;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "leasehold: %s\n", message.c_str());
  return 2;
}

lh::log::Logger makeLogger(const lh::config::Config& cfg) {
  using lh::config::LogLevel;
  const auto level = cfg.logLevel == LogLevel::Debug   ? lh::log::Level::kDebug
                     : cfg.logLevel == LogLevel::Warn  ? lh::log::Level::kWarn
                     : cfg.logLevel == LogLevel::Error ? lh::log::Level::kError
                                                       : lh::log::Level::kInfo;
  return lh::log::Logger(cfg.logFormat == lh::config::LogFormat::Json ? lh::log::Format::kJson
                                                                      : lh::log::Format::kText,
                         level);
}

lh::supervise::SupervisorConfig supervisorConfig(const lh::config::Config& cfg,
                                                 const lh::publish::LeaseName& lease) {
  using lh::config::RestartPolicy;
  lh::supervise::SupervisorConfig c;
  c.command = cfg.command;
  c.lease = lease.ns + "/" + lease.name;
  c.identity = cfg.identity;
  c.killGrace = cfg.killGrace;
  c.drainTimeout = cfg.drainTimeout;
  c.restart = cfg.restart == RestartPolicy::Always      ? lh::supervise::RestartPolicy::kAlways
              : cfg.restart == RestartPolicy::OnFailure ? lh::supervise::RestartPolicy::kOnFailure
                                                        : lh::supervise::RestartPolicy::kNever;
  c.exitOnLoss = cfg.exitOnLoss;
  return c;
}

// Renewals that hang past the renew deadline are useless: bound every request well inside it.
std::chrono::milliseconds requestDeadline(const lh::election::ElectionTimings& t) {
  using namespace std::chrono;
  return std::clamp(duration_cast<milliseconds>(t.renewDeadline / 2), 500ms, 5000ms);
}

int run(const lh::config::Config& cfg, const lh::config::ConfigLoader::Environment& env) {
  const lh::log::Logger logger = makeLogger(cfg);
  const auto watchHook = lh::runtime::watchTimeoutHookFromEnvironment();
  if (!watchHook.message.empty()) std::fprintf(stderr, "%s\n", watchHook.message.c_str());
  lh::cluster::KubeconfigOptions kubeconfig{cfg.kubeconfig, cfg.context};
  auto rest = lh::cluster::RestConfigLoader::load(kubeconfig, env);
  if (!rest) return fail(rest.message());
  const std::string podNamespace =
      envOr(env, "POD_NAMESPACE", rest->defaultNamespace.value_or("default"));
  const std::string ns = cfg.leaseNamespace.value_or(podNamespace);
  const std::string podName = envOr(env, "POD_NAME");
  if (!cfg.podLabel.empty() && podName.empty()) {
    return fail("--pod-label needs POD_NAME (and POD_NAMESPACE) from the downward API");
  }

  if (cfg.shards > 0) {
    const std::string shardNs = ns.empty() ? "default" : ns;
    std::optional<lh::supervise::SupervisorConfig> run;
    if (cfg.runMode) run = supervisorConfig(cfg, {shardNs, cfg.leaseName});
    return lh::app::runShardProcess(
        {cfg, *rest, shardNs, envOr(env, "POD_IP"), watchHook.seconds, std::move(run)}, logger);
  }

  boost::asio::io_context io(1);
  lh::runtime::AsioClock clock(io);
  if (clock.rate() != 1.0) {
    logger.warn("TEST HOOK ACTIVE: scaled monotonic clock",
                {{"rate", std::to_string(clock.rate())}});
  }
  std::mt19937_64 rng{std::random_device{}()};
  auto random01 = [&rng] { return std::uniform_real_distribution<double>(0, 1)(rng); };
  lh::publish::Metrics metrics;
  // The one thread besides the loop: status file writes, host name lookups (docs/design.md).
  lh::runtime::BlockingWorker worker([&io](auto f) { boost::asio::post(io, std::move(f)); });
  lh::app::ApiConnections api(io, *rest, std::string("leasehold/") + LEASEHOLD_VERSION, metrics,
                              logger, worker);

  lh::app::KubeSidecarSetup setup;
  setup.lease = {ns.empty() ? "default" : ns, cfg.leaseName};
  setup.identity = cfg.identity;
  setup.podName = cfg.podName;
  setup.podIp = envOr(env, "POD_IP");
  setup.requestDeadline = requestDeadline(cfg.timings);
  setup.statusFile = cfg.statusFile;
  if (watchHook.seconds) setup.watchTimeoutSeconds = *watchHook.seconds;
  if (!cfg.podLabel.empty()) setup.podLabel = {{cfg.podLabel, {podNamespace, podName}}};
  auto ports = lh::app::makeKubeSidecarPorts(setup, api, clock, worker, logger, random01);
  std::unique_ptr<lh::app::RunMode> runMode;
  if (cfg.runMode) {
    auto started = lh::app::RunMode::start(io, clock, supervisorConfig(cfg, setup.lease), logger);
    if (auto* problem = std::get_if<std::string>(&started)) return fail(*problem);
    runMode = std::move(std::get<std::unique_ptr<lh::app::RunMode>>(started));
    ports.command = runMode->port();
  }
  std::optional<lh::publish::StatusServer> status;
  ports.leadershipMayHaveChanged = [&status] {
    if (status) status->leadershipMayHaveChanged();
  };
  lh::app::SidecarConfig sidecarConfig{
      {lh::election::Identity{cfg.identity}, cfg.timings,
       cfg.followerMode == lh::config::FollowerMode::Poll ? lh::election::FollowerMode::kPoll
                                                          : lh::election::FollowerMode::kWatch},
      setup.lease,
      cfg.releaseCooldown};
  sidecarConfig.alias = cfg.podName;  // a handover request may name the pod instead
  sidecarConfig.elector.coordinated = cfg.coordinated;
  lh::app::Sidecar sidecar(clock, std::move(sidecarConfig), std::move(ports), metrics, logger,
                           random01);

  status.emplace(io, lh::net::HttpServer::Options{cfg.httpAddress.host, cfg.httpAddress.port},
                 clock, setup.lease,
                 lh::publish::StatusSource{[&sidecar] { return sidecar.leadership(); },
                                           [&sidecar] { sidecar.release(); }, cfg.releaseCooldown});
  if (auto err = status->listen())
    return fail("--http-address " + cfg.httpAddress.toString() + ": " + *err);
  if (auto problem = sidecar.writeInitialStatusFile()) return fail("--status-file: " + *problem);
  lh::publish::ProbeServer probes(
      io, lh::net::HttpServer::Options{cfg.probeAddress.host, cfg.probeAddress.port}, metrics,
      {[&sidecar] { return sidecar.leadership(); },
       [&sidecar] { return sidecar.unhealthyReason(); }, [&api] { return api.answered(); }});
  if (auto err = probes.listen())
    return fail("--probe-address " + cfg.probeAddress.toString() + ": " + *err);

  // --coordinated: this replica's LeaseCandidate, on the side connection (never in front of a
  // renewal). Deleted before the release on the way out, so the controller cannot name a
  // replica that is leaving.
  std::optional<lh::kube::LeaseCandidate> candidate;
  if (cfg.coordinated) {
    lh::kube::LeaseCandidateOptions options;
    options.requestDeadline = setup.requestDeadline;
    candidate.emplace(
        api.side(), clock,
        lh::kube::LeaseCandidateSpec{setup.lease.ns, cfg.identity, cfg.leaseName,
                                     cfg.coordinatedVersion.empty() ? std::string(LEASEHOLD_VERSION)
                                                                    : cfg.coordinatedVersion,
                                     "", "OldestEmulationVersion"},
        random01, options);
    candidate->setProblemHandler([&logger](const std::string& p) { logger.warn(p); });
  }
  const auto shutdownSidecar = [&](std::function<void()> finished) {
    if (!candidate) return (void)sidecar.shutdown(std::move(finished));
    candidate->stop([&sidecar, finished = std::move(finished)]() mutable {
      sidecar.shutdown(std::move(finished));
    });
  };

  const auto stopEverything = [&] {
    status->stop();
    probes.stop();
    api.shutdown();
    io.stop();
  };
  lh::app::SignalShutdown signals(
      io, logger,
      [&](auto finished) {
        if (runMode) runMode->noteSignal(signals.firstSignal());
        shutdownSidecar(std::move(finished));
      },
      stopEverything);
  if (runMode) {
    lh::app::attachRunModeSignals(signals, *runMode, logger,
                                  [&] { shutdownSidecar(stopEverything); });
  }

  logger.info("starting", {{"identity", cfg.identity},
                           {"lease", setup.lease.ns + "/" + setup.lease.name},
                           {"server", rest->server},
                           {"access", rest->source},
                           {"status", cfg.httpAddress.host + ":" + std::to_string(status->port())},
                           {"probes", cfg.probeAddress.host + ":" + std::to_string(probes.port())},
                           {"leaseDuration", lh::time::formatDuration(cfg.timings.leaseDuration)},
                           {"renewDeadline", lh::time::formatDuration(cfg.timings.renewDeadline)},
                           {"retryPeriod", lh::time::formatDuration(cfg.timings.retryPeriod)},
                           {"mode", cfg.runMode ? "run" : "sidecar"},
                           {"coordinated", cfg.coordinated ? "true" : "false"}});
  if (candidate) candidate->start();
  sidecar.start();
  lh::runtime::keepOnlyTouchedCodeResident();  // start-up code leaves the RSS
  const auto settled =
      lh::runtime::keepOnlyTouchedCodeResidentAfter(clock, lh::runtime::kStartupOver);
  io.run();
  const int code = runMode ? runMode->exitCode() : 0;
  logger.info("stopped", {{"exitCode", std::to_string(code)}});
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // Run mode's watchdog is this binary executed again: nothing else may run first.
  if (lh::supervise::WatchdogProcess::invoked(argc, argv)) {
    lh::supervise::WatchdogProcess::run(lh::supervise::kWatchdogOrderFd);
  }
  ::signal(SIGPIPE, SIG_IGN);
  const auto env = lh::config::ConfigLoader::processEnvironment();
  const auto outcome = lh::config::ConfigLoader(env).load(argc, argv);
  if (const auto* help = std::get_if<lh::config::HelpRequested>(&outcome)) {
    std::cout << help->text;
    return 0;
  }
  if (std::holds_alternative<lh::config::VersionRequested>(outcome)) {
    std::cout << "leasehold " << LEASEHOLD_VERSION << "\n";
    return 0;
  }
  if (const auto* error = std::get_if<lh::config::ConfigError>(&outcome))
    return fail(error->message);
  const auto& cfg = std::get<lh::config::Config>(outcome);
  if (cfg.printConfig) {
    std::cout << lh::config::ConfigPrinter::print(cfg);
    return 0;
  }
  return run(cfg, env);
}

// leasehold: reads the configuration and the cluster access, resolves the Lease's namespace,
// and hands over to the process for one Lease (app/SidecarProcess), for a shard group
// (app/ShardProcess) or for an etcd election (app/EtcdProcess), which wire the event loop,
// the Sidecars, the servers and the signals. Exit status: 0 after a clean shutdown (run mode: the
// command's, lock/RunMode.h), 2 when the configuration is refused or the process cannot start
// (docs/design.md, "Exit codes"). `leasehold copy-self DEST` (install/CopySelfCommand.h) copies
// the binary and exits, before anything else is read; `leasehold inject` (inject/InjectCommand.h)
// is the sidecar injector's admission webhook, with flags of its own; `leasehold scale-down
// --deployment NAME` (teardown/ScaleDownCommand.h), the chart's pre-delete hook, takes the
// Deployment down and exits.
#include <signal.h>

#include <cstdio>
#include <iostream>

#include "app/ComponentSettings.h"
#include "app/EtcdProcess.h"
#include "app/ProcessRuntime.h"
#include "app/ShardProcess.h"
#include "app/SidecarProcess.h"
#include "cluster/RestConfigLoader.h"
#include "config/ConfigLoader.h"
#include "config/ConfigPrinter.h"
#include "inject/InjectCommand.h"
#include "install/CopySelfCommand.h"
#include "runtime/ResidentCode.h"
#include "runtime/WatchTimeoutHook.h"
#include "supervise/WatchdogOrder.h"
#include "supervise/WatchdogProcess.h"
#include "teardown/ScaleDownCommand.h"

namespace lh = leasehold;

namespace {

std::string envOr(const lh::config::ConfigLoader::Environment& env, const char* key,
                  std::string fallback = "") {
  auto it = env.find(key);
  return it == env.end() || it->second.empty() ? fallback : it->second;
}

int run(const lh::config::Config& cfg, const lh::config::ConfigLoader::Environment& env) {
  const lh::log::Logger logger = lh::app::loggerFor(cfg);
  if (cfg.store == lh::config::Store::Etcd) return lh::app::runEtcdProcess(cfg, logger);
  const auto watchHook = lh::runtime::watchTimeoutHookFromEnvironment();
  if (!watchHook.message.empty()) std::fprintf(stderr, "%s\n", watchHook.message.c_str());
  auto rest = lh::cluster::RestConfigLoader::load({cfg.kubeconfig, cfg.context}, env);
  if (!rest) return lh::app::failToStart(rest.message());
  const std::string podNamespace =
      lh::config::podNamespace(envOr(env, "POD_NAMESPACE"), rest->defaultNamespace);
  const std::string ns = lh::config::leaseNamespace(cfg, podNamespace);
  if (cfg.shards > 0) {
    return lh::app::runShardProcess({cfg, *rest, ns, envOr(env, "POD_IP"), watchHook.seconds},
                                    logger);
  }
  std::optional<lh::kube::PodRef> labelledPod;
  if (!cfg.podLabel.empty()) {
    const std::string podName = envOr(env, "POD_NAME");
    if (podName.empty()) {
      return lh::app::failToStart(
          "--pod-label needs POD_NAME (and POD_NAMESPACE) from the downward API");
    }
    labelledPod = lh::kube::PodRef{podNamespace, podName};
  }
  std::optional<lh::kube::OwnPod> fastFailover;
  if (cfg.fastFailover) {
    std::string missing;
    for (const char* key : {"POD_NAME", "POD_UID", "LEASEHOLD_CONTAINER"}) {
      if (envOr(env, key).empty()) missing += (missing.empty() ? "" : ", ") + std::string(key);
    }
    if (!missing.empty()) {
      return lh::app::failToStart(
          "--fast-failover needs POD_NAME and POD_UID from the downward API (metadata.name, "
          "metadata.uid) and LEASEHOLD_CONTAINER (this container's name); not set: " +
          missing);
    }
    fastFailover = lh::kube::OwnPod{
        podNamespace, envOr(env, "POD_NAME"),
        lh::kube::OwnContainer{envOr(env, "POD_UID"), envOr(env, "LEASEHOLD_CONTAINER")}};
  }
  return lh::app::runSidecarProcess(
      {cfg, *rest, ns, envOr(env, "POD_IP"), watchHook.seconds, labelledPod, fastFailover}, logger);
}

}  // namespace

int main(int argc, char** argv) {
  // Run mode's watchdog is this binary executed again: nothing else may run first.
  if (lh::supervise::WatchdogProcess::invoked(argc, argv)) {
    lh::supervise::WatchdogProcess::run(lh::supervise::kWatchdogOrderFd);
  }
  if (lh::install::CopySelfCommand::invoked(argc, argv)) {
    return lh::install::CopySelfCommand::run({argv + 2, argv + argc}, std::cout, std::cerr);
  }
  if (lh::inject::InjectCommand::invoked(argc, argv)) {
    ::signal(SIGPIPE, SIG_IGN);
    return lh::inject::InjectCommand::run({argv + 2, argv + argc}, std::cout, std::cerr);
  }
  if (lh::teardown::ScaleDownCommand::invoked(argc, argv)) {
    return lh::teardown::ScaleDownCommand::run({argv + 2, argv + argc}, std::cout, std::cerr,
                                               lh::config::ConfigLoader::processEnvironment());
  }
  // Before the set-up: what exec, the loader and the static constructors mapped goes, and the
  // set-up's code comes in a piece at a time (the peak RSS is the set-up's).
  lh::runtime::keepOnlyTouchedCodeResident();
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
    return lh::app::failToStart(error->message);
  const auto& cfg = std::get<lh::config::Config>(outcome);
  if (cfg.printConfig) {
    std::cout << lh::config::ConfigPrinter::print(cfg);
    return 0;
  }
  return run(cfg, env);
}

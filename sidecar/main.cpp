// leasehold: reads the configuration and hands over to its store's process: app/KubeProcess
// (the cluster access, the Lease's namespace, then one Lease or a shard group) or
// app/EtcdProcess (--store etcd) or app/ZooKeeperProcess (--store zookeeper), which wire the event
// loop, the Sidecars, the servers and the signals. Exit status: 0 after a clean shutdown (run mode:
// the command's, lock/RunMode.h), 2 when the configuration is refused or the process cannot start
// (docs/design.md, "Exit codes"). `leasehold copy-self DEST` (install/CopySelfCommand.h) copies the
// binary and exits, before anything else is read; `leasehold inject` (inject/InjectCommand.h) is
// the sidecar injector's admission webhook, with flags of its own; `leasehold scale-down
// --deployment NAME` (teardown/ScaleDownCommand.h), the chart's pre-delete hook, takes the
// Deployment down and exits.
#include <signal.h>

#include <iostream>

#include "app/ComponentSettings.h"
#include "app/EtcdProcess.h"
#include "app/KubeProcess.h"
#include "app/ProcessRuntime.h"
#include "app/ZooKeeperProcess.h"
#include "config/ConfigLoader.h"
#include "config/ConfigPrinter.h"
#include "inject/InjectCommand.h"
#include "install/CopySelfCommand.h"
#include "runtime/ResidentCode.h"
#include "supervise/WatchdogOrder.h"
#include "supervise/WatchdogProcess.h"
#include "teardown/ScaleDownCommand.h"

namespace lh = leasehold;

namespace {

// One process per store; each reads what it needs of the environment itself.
int run(const lh::config::Config& cfg, const lh::config::ConfigLoader::Environment& env) {
  const lh::log::Logger logger = lh::app::loggerFor(cfg);
  if (cfg.store == lh::config::Store::Etcd) return lh::app::runEtcdProcess(cfg, logger);
  if (cfg.store == lh::config::Store::ZooKeeper) return lh::app::runZooKeeperProcess(cfg, logger);
  return lh::app::runKubeProcess(cfg, env, logger);
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

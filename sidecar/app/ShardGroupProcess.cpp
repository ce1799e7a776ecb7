#include "app/ShardGroupProcess.h"

#include "app/ComponentSettings.h"
#include "app/ProcessRuntime.h"
#include "app/ProcessSignals.h"
#include "lock/RunMode.h"
#include "publish/ProbeServer.h"
#include "publish/StatusFile.h"
#include "publish/StatusFileWriter.h"
#include "publish/StatusServer.h"
#include "shard/ShardCommands.h"
#include "shard/ShardMode.h"
#include "shard/ShardPublisher.h"

namespace leasehold::app {

int serveShards(LoopRuntime& rt, const config::Config& cfg, ShardStore store,
                const log::Logger& logger) {
  auto& group = *store.group;
  std::unique_ptr<lock::RunMode> runMode;
  std::vector<lock::CommandPort> commands;
  if (cfg.runMode) {
    std::vector<std::string> locks;
    for (std::size_t i = 0; i < group.shards(); i++)
      locks.push_back(leaseVariable(group.shardName(i)));
    auto started = lock::RunMode::start(
        rt.io, rt.clock,
        // Each shard's command gets its own shard's lock (shardCommands sets it).
        shard::shardCommands(supervisorConfigFor(cfg, group.shardName(0)), locks), logger);
    if (auto* problem = std::get_if<std::string>(&started)) return failToStart(*problem);
    runMode = std::move(std::get<std::unique_ptr<lock::RunMode>>(started));
    for (std::size_t i = 0; i < group.shards(); i++)
      commands.push_back(runMode->port(i));
  }
  const publish::LeaseName shardZero = group.shardName(0);
  shard::ShardMode shards(
      rt.clock,
      {cfg.identity, cfg.podName, cfg.leaseName, cfg.timings, cfg.shardDrain, std::move(commands)},
      std::move(store.group), rt.metrics, logger);
  rt.metrics.setExtra([&shards] { return shards.metricsText(); });

  // /leader and friends answer for shard 0; /shards and /shards/watch for all of them.
  publish::StatusServer status(
      rt.io, net::HttpServer::Options{cfg.httpAddress.host, cfg.httpAddress.port}, rt.clock,
      shardZero,
      publish::StatusSource{[&shards] { return shards.leadership(); },
                            [&shards] { shards.releaseShardZero(); }, time::Duration::zero()});
  std::shared_ptr<publish::StatusFileWriter> file;
  if (!cfg.statusFile.empty()) {
    auto target = std::make_shared<publish::StatusFile>(cfg.statusFile);
    file = std::make_shared<publish::StatusFileWriter>(
        [target](const std::string& content) { return target->write(content); }, rt.worker);
  }
  shard::ShardPublisher published(rt.clock, shards, status.http(), file, logger,
                                  [&status] { status.leadershipMayHaveChanged(); });
  if (auto err = status.listen()) {
    return failToStart("--http-address " + cfg.httpAddress.toString() + ": " + *err);
  }
  if (auto problem = published.writeInitialStatusFile())
    return failToStart("--status-file: " + *problem);

  publish::ProbeServer probes(
      rt.io, net::HttpServer::Options{cfg.probeAddress.host, cfg.probeAddress.port}, rt.metrics,
      {[&shards] { return shards.leadership(); }, [&shards] { return shards.unhealthyReason(); },
       store.answered});
  if (auto err = probes.listen()) {
    return failToStart("--probe-address " + cfg.probeAddress.toString() + ": " + *err);
  }

  const auto stopEverything = [&] {
    published.closeStreams();
    status.stop();
    probes.stop();
    store.shutdown();
    rt.io.stop();
  };
  const auto shutdownShards = [&](std::function<void()> finished) {
    shards.shutdown([&published, finished = std::move(finished)]() mutable {
      published.finish(std::move(finished));
    });
  };
  ProcessSignals<lock::RunMode> signals(rt.io, logger, runMode.get(), shutdownShards,
                                        stopEverything);

  log::Fields fields{{"identity", cfg.identity}};
  fields.insert(fields.end(), store.starting.begin(), store.starting.end());
  fields.insert(fields.end(),
                {{"shards", std::to_string(cfg.shards)},
                 {"status", cfg.httpAddress.host + ":" + std::to_string(status.port())},
                 {"probes", cfg.probeAddress.host + ":" + std::to_string(probes.port())},
                 {"leaseDuration", time::formatDuration(cfg.timings.leaseDuration)},
                 {"renewDeadline", time::formatDuration(cfg.timings.renewDeadline)},
                 {"retryPeriod", time::formatDuration(cfg.timings.retryPeriod)},
                 {"renewInterval", time::formatDuration(cfg.timings.renewEvery())},
                 {"mode", runMode ? "run-shards" : "shards"}});
  logger.info("starting", fields);
  shards.start();
  rt.run();
  const int code = runMode ? runMode->exitCode() : 0;
  logger.info("stopped", {{"exitCode", std::to_string(code)}});
  return code;
}

}  // namespace leasehold::app

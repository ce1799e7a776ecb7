#include "app/ShardProcess.h"

#include <unistd.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <random>

#include "app/ApiConnections.h"
#include "app/RunModeSignals.h"
#include "app/ShardMode.h"
#include "app/ShardRunMode.h"
#include "app/SignalShutdown.h"
#include "publish/JsonEventStream.h"
#include "publish/Metrics.h"
#include "publish/ProbeServer.h"
#include "publish/StatusFile.h"
#include "publish/StatusFileWriter.h"
#include "publish/StatusServer.h"
#include "runtime/AsioClock.h"
#include "runtime/BlockingWorker.h"
#include "runtime/ResidentCode.h"

namespace leasehold::app {

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "leasehold: %s\n", message.c_str());
  return 2;
}

}  // namespace

int runShardProcess(const ShardProcessInputs& in, const log::Logger& logger) {
  const auto& cfg = in.config;
  boost::asio::io_context io(1);
  runtime::AsioClock clock(io);
  if (clock.rate() != 1.0) {
    logger.warn("TEST HOOK ACTIVE: scaled monotonic clock",
                {{"rate", std::to_string(clock.rate())}});
  }
  std::mt19937_64 rng{std::random_device{}()};
  auto random01 = [&rng] { return std::uniform_real_distribution<double>(0, 1)(rng); };
  publish::Metrics metrics;
  runtime::BlockingWorker worker([&io](auto f) { boost::asio::post(io, std::move(f)); });
  ApiConnections api(io, in.rest, std::string("leasehold/") + LEASEHOLD_VERSION, metrics, logger,
                     worker);

  ShardModeConfig sc;
  sc.identity = cfg.identity;
  sc.podName = cfg.podName;
  sc.podIp = in.podIp;
  sc.group = {in.leaseNamespace, cfg.leaseName};
  sc.shards = cfg.shards;
  sc.timings = cfg.timings;
  sc.drain = cfg.shardDrain;
  sc.requestDeadline = std::clamp(
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg.timings.renewDeadline / 2),
      std::chrono::milliseconds(500), std::chrono::milliseconds(5000));
  if (in.watchTimeoutSeconds) sc.watchTimeoutSeconds = *in.watchTimeoutSeconds;
  std::unique_ptr<ShardRunMode> runMode;
  if (in.run) {
    auto started = ShardRunMode::start(io, clock, *in.run, in.leaseNamespace, cfg.leaseName,
                                       cfg.shards, logger);
    if (auto* problem = std::get_if<std::string>(&started)) return fail(*problem);
    runMode = std::move(std::get<std::unique_ptr<ShardRunMode>>(started));
    for (std::size_t i = 0; i < cfg.shards; i++)
      sc.commands.push_back(runMode->port(i));
  }
  ShardMode shards(clock, sc, api.lease(), metrics, logger, random01);
  metrics.setExtra([&shards] { return shards.metricsText(); });

  // /leader and friends answer for shard 0; /shards and /shards/watch for all of them.
  publish::StatusServer status(
      io, net::HttpServer::Options{cfg.httpAddress.host, cfg.httpAddress.port}, clock,
      {in.leaseNamespace, cfg.leaseName + "-0"},
      publish::StatusSource{[&shards] { return shards.leadership(); },
                            [&shards] { shards.releaseShardZero(); }, time::Duration::zero()});
  publish::JsonEventStream stream(clock, [&shards] { return shards.json(); });
  status.http().route("GET", "/shards", [&shards](const net::ServerRequest&) {
    net::ServerResponse r;
    r.contentType = "application/json";
    r.body = shards.json();
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  });
  status.http().routeEvents("/shards/watch",
                            [&stream](std::shared_ptr<net::EventStream> c) { stream.add(c); });
  if (auto err = status.listen()) {
    return fail("--http-address " + cfg.httpAddress.toString() + ": " + *err);
  }

  std::shared_ptr<publish::StatusFileWriter> file;
  if (!cfg.statusFile.empty()) {
    auto target = std::make_shared<publish::StatusFile>(cfg.statusFile);
    file = std::make_shared<publish::StatusFileWriter>(
        [target](const std::string& content) { return target->write(content); }, worker);
    if (auto problem = file->writeNow(shards.json() + "\n"))
      return fail("--status-file: " + *problem);
  }
  std::string fileProblem;
  shards.setOwnedSetChanged([&] {
    const std::string json = shards.json();
    stream.publish(json);
    status.leadershipMayHaveChanged();
    if (file) {
      file->write(json + "\n", [&logger, &fileProblem](const std::optional<std::string>& p) {
        if (p.value_or("") == fileProblem) return;
        if (p) logger.error("cannot write the status file", {{"problem", *p}});
        fileProblem = p.value_or("");
      });
    }
  });

  publish::ProbeServer probes(
      io, net::HttpServer::Options{cfg.probeAddress.host, cfg.probeAddress.port}, metrics,
      {[&shards] { return shards.leadership(); }, [&shards] { return shards.unhealthyReason(); },
       [&api] { return api.answered(); }});
  if (auto err = probes.listen()) {
    return fail("--probe-address " + cfg.probeAddress.toString() + ": " + *err);
  }

  const auto stopEverything = [&] {
    stream.closeAll();
    status.stop();
    probes.stop();
    api.shutdown();
    io.stop();
  };
  const auto shutdownShards = [&](std::function<void()> finished) {
    shards.shutdown([&, finished = std::move(finished)] {
      if (!file) return finished();
      file->write(shards.json() + "\n", [](const auto&) {});
      file->flush(finished);
    });
  };
  SignalShutdown signals(
      io, logger,
      [&](auto finished) {
        if (runMode) runMode->noteSignal(signals.firstSignal());
        shutdownShards(std::move(finished));
      },
      stopEverything);
  if (runMode) {
    attachRunModeSignals(signals, *runMode, logger, [&] { shutdownShards(stopEverything); });
  }

  logger.info("starting", {{"identity", cfg.identity},
                           {"group", in.leaseNamespace + "/" + cfg.leaseName},
                           {"shards", std::to_string(cfg.shards)},
                           {"server", in.rest.server},
                           {"status", cfg.httpAddress.host + ":" + std::to_string(status.port())},
                           {"probes", cfg.probeAddress.host + ":" + std::to_string(probes.port())},
                           {"leaseDuration", time::formatDuration(cfg.timings.leaseDuration)},
                           {"renewDeadline", time::formatDuration(cfg.timings.renewDeadline)},
                           {"retryPeriod", time::formatDuration(cfg.timings.retryPeriod)},
                           {"mode", runMode ? "run-shards" : "shards"}});
  shards.start();
  runtime::keepOnlyTouchedCodeResident();
  const auto settled = runtime::keepOnlyTouchedCodeResidentAfter(clock, runtime::kStartupOver);
  io.run();
  const int code = runMode ? runMode->exitCode() : 0;
  logger.info("stopped", {{"exitCode", std::to_string(code)}});
  return code;
}

}  // namespace leasehold::app

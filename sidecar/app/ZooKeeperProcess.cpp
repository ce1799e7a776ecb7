#include "app/ZooKeeperProcess.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "app/LockProcess.h"
#include "app/ShardGroupProcess.h"
#include "app/StartupFile.h"
#include "app/StatusFilePorts.h"
#include "net/WorkerHostResolver.h"
#include "zookeeper/ZNodeLockName.h"
#include "zookeeper/ZkCampaign.h"
#include "zookeeper/ZkSession.h"
#include "zookeeper/ZkShardGroup.h"

namespace leasehold::app {

int runZooKeeperProcess(const config::Config& cfg, const log::Logger& logger) {
  LoopRuntime rt(logger);
  std::string problem;
  zookeeper::ZkSession::Options options;
  options.connectString = cfg.zkServers;
  options.sessionTimeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(config::zkSessionTimeoutOf(cfg));
  options.requestTimeout = cfg.timings.requestDeadline();
  if (cfg.zkTls || !cfg.zkCacert.empty() || !cfg.zkCert.empty()) {
    net::TlsOptions tls;
    if (auto tlsProblem = readPemFiles({{"zk-cacert", &cfg.zkCacert, &tls.caPem},
                                        {"zk-cert", &cfg.zkCert, &tls.clientCertPem},
                                        {"zk-key", &cfg.zkKey, &tls.clientKeyPem}})) {
      return failToStart(*tlsProblem);
    }
    options.tls = std::move(tls);
  }
  if (!cfg.zkUser.empty()) {
    auto password = readPasswordFile("zk-password-file", cfg.zkPasswordFile, problem);
    if (!password) return failToStart(problem);
    options.credentials = zookeeper::ZkSession::Credentials{cfg.zkUser, std::move(*password)};
  }
  net::WorkerHostResolver resolver(rt.worker);
  options.resolver = &resolver;
  zookeeper::ZkSession session(rt.io, rt.clock, std::move(options));
  if (session.configurationError()) {
    return failToStart("--zk-servers: " + *session.configurationError());
  }

  const log::Fields starting{
      {"store", "zookeeper"},
      {cfg.shards > 0 ? "group" : "election", "/" + cfg.leaseName},
      {"servers", cfg.zkServers},
      {"sessionTimeout", time::formatDuration(config::zkSessionTimeoutOf(cfg))},
      {"user", cfg.zkUser.empty() ? "(none)" : cfg.zkUser}};
  if (cfg.shards > 0) {
    // One session for the whole group (the member's liveness): ZkShardGroup shares it between
    // its membership, its view and every shard's campaign, and opens it once.
    ShardStore store;
    store.group = std::make_unique<zookeeper::ZkShardGroup>(
        rt.clock, session,
        zookeeper::ZkShardGroupConfig{cfg.identity, cfg.leaseName, cfg.shards, cfg.timings,
                                      cfg.zkServerLag},
        logger);
    store.answered = [&session] { return session.answered(); };
    store.shutdown = [&session] { session.close([] {}); };
    store.starting = starting;
    return serveShards(rt, cfg, std::move(store), logger);
  }

  lock::SidecarConfig sidecarConfig{{election::Identity{cfg.identity}, cfg.timings},
                                    zookeeper::znodeLockName(cfg.leaseName),
                                    cfg.releaseCooldown};
  LockStore store;
  store.ports.candidacy = std::make_unique<zookeeper::ZkCampaign>(
      rt.clock, session,
      zookeeper::ZkCampaignConfig{cfg.identity, "/" + cfg.leaseName, cfg.timings, cfg.zkServerLag},
      std::function<std::string()>{}, &logger);
  // Kubernetes Events have no counterpart on ZooKeeper: the log says it all.
  store.ports.events = {[](std::string) {}, [](auto, auto done) { done(); }};
  if (!cfg.statusFile.empty())
    store.ports.statusFile = makeStatusFilePort(cfg.statusFile, rt.worker);
  store.answered = [&session] { return session.answered(); };
  store.shutdown = [&session] { session.close([] {}); };
  store.starting = starting;
  return serveLock(rt, cfg, std::move(sidecarConfig), std::move(store), logger);
}

}  // namespace leasehold::app

#include "app/EtcdProcess.h"

#include <memory>
#include <optional>
#include <string>

#include "app/LockProcess.h"
#include "app/ShardGroupProcess.h"
#include "app/StartupFile.h"
#include "app/StatusFilePorts.h"
#include "etcd/ElectionLockName.h"
#include "etcd/EtcdCampaign.h"
#include "etcd/EtcdGateway.h"
#include "etcd/EtcdShardGroup.h"
#include "net/WorkerHostResolver.h"

namespace leasehold::app {

int runEtcdProcess(const config::Config& cfg, const log::Logger& logger) {
  LoopRuntime rt(logger);
  std::string problem;
  etcd::EtcdGateway::Options options;
  options.endpoints = cfg.etcdEndpoints;
  if (auto tlsProblem = readPemFiles({{"etcd-cacert", &cfg.etcdCacert, &options.tls.caPem},
                                      {"etcd-cert", &cfg.etcdCert, &options.tls.clientCertPem},
                                      {"etcd-key", &cfg.etcdKey, &options.tls.clientKeyPem}})) {
    return failToStart(*tlsProblem);
  }
  if (!cfg.etcdUser.empty()) {
    auto password = readPasswordFile("etcd-password-file", cfg.etcdPasswordFile, problem);
    if (!password) return failToStart(problem);
    options.credentials = etcd::EtcdGateway::Credentials{cfg.etcdUser, std::move(*password)};
  }
  net::WorkerHostResolver resolver(rt.worker);
  options.resolver = &resolver;
  etcd::EtcdGateway gateway(rt.io, rt.clock, std::move(options));
  if (gateway.configurationError()) return failToStart(*gateway.configurationError());

  std::string endpoints;
  for (const auto& url : cfg.etcdEndpoints)
    endpoints += (endpoints.empty() ? "" : ",") + url;
  const log::Fields starting{{"store", "etcd"},
                             {cfg.shards > 0 ? "group" : "election", cfg.leaseName},
                             {"endpoints", endpoints},
                             {"user", cfg.etcdUser.empty() ? "(none)" : cfg.etcdUser}};
  if (cfg.shards > 0) {
    ShardStore store;
    store.group = std::make_unique<etcd::EtcdShardGroup>(
        rt.clock, gateway,
        etcd::EtcdShardGroupConfig{cfg.identity, cfg.leaseName, cfg.shards, cfg.timings}, logger);
    store.answered = [&gateway] { return gateway.answered(); };
    store.shutdown = [&gateway] { gateway.shutdown(); };
    store.starting = starting;
    return serveShards(rt, cfg, std::move(store), logger);
  }

  lock::SidecarConfig sidecarConfig{{election::Identity{cfg.identity}, cfg.timings},
                                    etcd::electionLockName(cfg.leaseName),
                                    cfg.releaseCooldown};
  LockStore store;
  store.ports.candidacy = std::make_unique<etcd::EtcdCampaign>(
      rt.clock, gateway, etcd::EtcdCampaignConfig{cfg.identity, cfg.leaseName, cfg.timings});
  // Kubernetes Events have no counterpart on etcd: the log says it all.
  store.ports.events = {[](std::string) {}, [](auto, auto done) { done(); }};
  if (!cfg.statusFile.empty())
    store.ports.statusFile = makeStatusFilePort(cfg.statusFile, rt.worker);
  store.answered = [&gateway] { return gateway.answered(); };
  store.shutdown = [&gateway] { gateway.shutdown(); };
  store.starting = starting;
  return serveLock(rt, cfg, std::move(sidecarConfig), std::move(store), logger);
}

}  // namespace leasehold::app

#include "app/ShardProcess.h"

#include <memory>

#include "app/ComponentSettings.h"
#include "app/ProcessRuntime.h"
#include "app/ShardGroupProcess.h"
#include "kube/LeaseShardGroup.h"

namespace leasehold::app {

int runShardProcess(const ShardProcessInputs& in, const log::Logger& logger) {
  const auto& cfg = in.config;
  ProcessRuntime rt(in.rest, logger);
  kube::LeaseShardGroupConfig gc;
  gc.identity = cfg.identity;
  gc.podName = cfg.podName;
  gc.podIp = in.podIp;
  gc.ns = in.leaseNamespace;
  gc.group = cfg.leaseName;
  gc.shards = cfg.shards;
  gc.timings = cfg.timings;
  gc.requestDeadline = renewalRequestDeadline(cfg.timings);
  if (in.watchTimeoutSeconds) gc.watchTimeoutSeconds = *in.watchTimeoutSeconds;
  ShardStore store;
  store.group =
      std::make_unique<kube::LeaseShardGroup>(rt.clock, gc, rt.api.lease(), logger, rt.random01());
  store.answered = [&rt] { return rt.api.answered(); };
  store.shutdown = [&rt] { rt.api.shutdown(); };
  store.starting = {{"group", in.leaseNamespace + "/" + cfg.leaseName}, {"server", in.rest.server}};
  return serveShards(rt, cfg, std::move(store), logger);
}

}  // namespace leasehold::app

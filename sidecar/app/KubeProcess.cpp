#include "app/KubeProcess.h"

#include <cstdio>
#include <optional>
#include <string>

#include "app/ProcessRuntime.h"
#include "app/ShardProcess.h"
#include "app/SidecarProcess.h"
#include "cluster/RestConfigLoader.h"
#include "runtime/WatchTimeoutHook.h"

namespace leasehold::app {
namespace {

std::string envOr(const config::ConfigLoader::Environment& env, const char* key,
                  std::string fallback = "") {
  auto it = env.find(key);
  return it == env.end() || it->second.empty() ? fallback : it->second;
}

}  // namespace

int runKubeProcess(const config::Config& cfg, const config::ConfigLoader::Environment& env,
                   const log::Logger& logger) {
  const auto watchHook = runtime::watchTimeoutHookFromEnvironment();
  if (!watchHook.message.empty()) std::fprintf(stderr, "%s\n", watchHook.message.c_str());
  auto rest = cluster::RestConfigLoader::load({cfg.kubeconfig, cfg.context}, env);
  if (!rest) return failToStart(rest.message());
  const std::string podNamespace =
      config::podNamespace(envOr(env, "POD_NAMESPACE"), rest->defaultNamespace);
  const std::string ns = config::leaseNamespace(cfg, podNamespace);
  if (cfg.shards > 0) {
    return runShardProcess({cfg, *rest, ns, envOr(env, "POD_IP"), watchHook.seconds}, logger);
  }
  std::optional<kube::PodRef> labelledPod;
  if (!cfg.podLabel.empty()) {
    const std::string podName = envOr(env, "POD_NAME");
    if (podName.empty()) {
      return failToStart("--pod-label needs POD_NAME (and POD_NAMESPACE) from the downward API");
    }
    labelledPod = kube::PodRef{podNamespace, podName};
  }
  std::optional<kube::OwnPod> fastFailover;
  if (cfg.fastFailover) {
    std::string missing;
    for (const char* key : {"POD_NAME", "POD_UID", "LEASEHOLD_CONTAINER"}) {
      if (envOr(env, key).empty()) missing += (missing.empty() ? "" : ", ") + std::string(key);
    }
    if (!missing.empty()) {
      return failToStart(
          "--fast-failover needs POD_NAME and POD_UID from the downward API (metadata.name, "
          "metadata.uid) and LEASEHOLD_CONTAINER (this container's name); not set: " +
          missing);
    }
    fastFailover =
        kube::OwnPod{podNamespace, envOr(env, "POD_NAME"),
                     kube::OwnContainer{envOr(env, "POD_UID"), envOr(env, "LEASEHOLD_CONTAINER")}};
  }
  return runSidecarProcess(
      {cfg, *rest, ns, envOr(env, "POD_IP"), watchHook.seconds, labelledPod, fastFailover}, logger);
}

}  // namespace leasehold::app

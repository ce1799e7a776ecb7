#include "config/Config.h"

#include <algorithm>

namespace leasehold::config {

std::string_view toString(LogFormat format) {
  return format == LogFormat::Json ? "json" : "text";
}

std::string_view toString(LogLevel level) {
  switch (level) {
    case LogLevel::Debug:
      return "debug";
    case LogLevel::Info:
      return "info";
    case LogLevel::Warn:
      return "warn";
    case LogLevel::Error:
      return "error";
  }
  return "info";
}

std::string_view toString(FollowerMode mode) {
  return mode == FollowerMode::Poll ? "poll" : "watch";
}

std::string_view toString(Store store) {
  switch (store) {
    case Store::Etcd:
      return "etcd";
    case Store::ZooKeeper:
      return "zookeeper";
    case Store::Kubernetes:
      break;
  }
  return "kubernetes";
}

time::Duration zkSessionTimeoutFloor(const Config& config) {
  return config.timings.renewDeadline + config.zkServerLag +
         std::max(config.timings.renewEvery(), config.timings.retryPeriod);
}

time::Duration zkSessionTimeoutOf(const Config& config) {
  if (config.zkSessionTimeout) return *config.zkSessionTimeout;
  return std::max(config.timings.leaseDuration, zkSessionTimeoutFloor(config));
}

std::string_view toString(RestartPolicy policy) {
  switch (policy) {
    case RestartPolicy::Never:
      return "never";
    case RestartPolicy::OnFailure:
      return "on-failure";
    case RestartPolicy::Always:
      return "always";
  }
  return "never";
}

std::string podNamespace(std::string_view podNamespaceVariable,
                         const std::optional<std::string>& accessNamespace) {
  if (!podNamespaceVariable.empty()) return std::string(podNamespaceVariable);
  if (accessNamespace && !accessNamespace->empty()) return *accessNamespace;
  return "default";
}

std::string leaseNamespace(const Config& config, const std::string& podNamespace) {
  if (config.leaseNamespace && !config.leaseNamespace->empty()) return *config.leaseNamespace;
  return podNamespace.empty() ? "default" : podNamespace;
}

std::string announcedVersion(const Config& config) {
  return config.coordinatedVersion.empty() ? std::string(LEASEHOLD_VERSION)
                                           : config.coordinatedVersion;
}

}  // namespace leasehold::config

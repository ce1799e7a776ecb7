#include "config/ConfigPrinter.h"

#include <yaml-cpp/yaml.h>

namespace leasehold::config {

namespace {

void optionalValue(YAML::Emitter& out, const char* key, const std::optional<std::string>& value) {
  out << YAML::Key << key << YAML::Value;
  if (value) {
    out << *value;
  } else {
    out << YAML::Null;
  }
}

}  // namespace

std::string ConfigPrinter::print(const Config& config) {
  // Config holds no credentials (they stay in the kubeconfig and service-account files), so
  // nothing here needs redacting; a field that ever carries a secret must print "<redacted>".
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "leaseName" << YAML::Value << config.leaseName;
  optionalValue(out, "leaseNamespace", config.leaseNamespace);
  out << YAML::Key << "identity" << YAML::Value << config.identity;
  out << YAML::Key << "leaseDuration" << YAML::Value
      << time::formatDuration(config.timings.leaseDuration);
  out << YAML::Key << "renewDeadline" << YAML::Value
      << time::formatDuration(config.timings.renewDeadline);
  out << YAML::Key << "retryPeriod" << YAML::Value
      << time::formatDuration(config.timings.retryPeriod);
  // Only when given: its default is --retry-period, whatever that is.
  if (config.timings.renewInterval) {
    out << YAML::Key << "renewInterval" << YAML::Value
        << time::formatDuration(*config.timings.renewInterval);
  }
  out << YAML::Key << "releaseCooldown" << YAML::Value
      << time::formatDuration(config.releaseCooldown);
  optionalValue(out, "kubeconfig", config.kubeconfig);
  optionalValue(out, "context", config.context);
  out << YAML::Key << "httpAddress" << YAML::Value << config.httpAddress.toString();
  out << YAML::Key << "probeAddress" << YAML::Value << config.probeAddress.toString();
  out << YAML::Key << "statusFile" << YAML::Value << YAML::DoubleQuoted << config.statusFile;
  out << YAML::Key << "podLabel" << YAML::Value << YAML::DoubleQuoted << config.podLabel;
  out << YAML::Key << "followerMode" << YAML::Value << std::string(toString(config.followerMode));
  if (config.coordinated) out << YAML::Key << "coordinated" << YAML::Value << true;
  if (config.fastFailover) out << YAML::Key << "fastFailover" << YAML::Value << true;
  if (!config.coordinatedVersion.empty()) {
    out << YAML::Key << "coordinatedVersion" << YAML::Value << YAML::DoubleQuoted
        << config.coordinatedVersion;
  }
  out << YAML::Key << "logFormat" << YAML::Value << std::string(toString(config.logFormat));
  out << YAML::Key << "logLevel" << YAML::Value << std::string(toString(config.logLevel));
  if (config.shards > 0) {
    out << YAML::Key << "shards" << YAML::Value << config.shards;
    out << YAML::Key << "shardDrain" << YAML::Value << time::formatDuration(config.shardDrain);
  }
  out << YAML::Key << "store" << YAML::Value << std::string(toString(config.store));
  if (config.store == Store::Etcd) {
    std::string endpoints;  // as the flag takes them, so that the output works as a file
    for (const auto& url : config.etcdEndpoints)
      endpoints += (endpoints.empty() ? "" : ",") + url;
    out << YAML::Key << "etcdEndpoints" << YAML::Value << endpoints;
    const auto path = [&out](const char* key, const std::string& value) {
      out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
    };
    path("etcdCacert", config.etcdCacert);
    path("etcdCert", config.etcdCert);
    path("etcdKey", config.etcdKey);
    path("etcdUser", config.etcdUser);
    path("etcdPasswordFile", config.etcdPasswordFile);  // the path, never the password
  }
  if (config.store == Store::ZooKeeper) {
    const auto path = [&out](const char* key, const std::string& value) {
      out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
    };
    path("zkServers", config.zkServers);
    out << YAML::Key << "zkSessionTimeout" << YAML::Value
        << time::formatDuration(zkSessionTimeoutOf(config));
    out << YAML::Key << "zkServerLag" << YAML::Value << time::formatDuration(config.zkServerLag);
    out << YAML::Key << "zkTls" << YAML::Value
        << (config.zkTls || !config.zkCacert.empty() || !config.zkCert.empty());
    path("zkCacert", config.zkCacert);
    path("zkCert", config.zkCert);
    path("zkKey", config.zkKey);
    path("zkUser", config.zkUser);
    path("zkPasswordFile", config.zkPasswordFile);  // the path, never the password
  }
  if (config.runMode) {
    // The command itself is not printed: its arguments may carry secrets.
    out << YAML::Key << "killGrace" << YAML::Value << time::formatDuration(config.killGrace);
    out << YAML::Key << "drainTimeout" << YAML::Value << time::formatDuration(config.drainTimeout);
    out << YAML::Key << "restart" << YAML::Value << std::string(toString(config.restart));
    out << YAML::Key << "exitOnLoss" << YAML::Value << config.exitOnLoss;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace leasehold::config

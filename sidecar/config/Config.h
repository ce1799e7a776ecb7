#pragma once
// The sidecar's effective configuration after flags, environment, file and defaults have been
// merged and validated (see ConfigLoader). Holds no secrets: credentials live in the kubeconfig
// or the service-account files and are read by kube/RestConfigLoader.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/ListenAddress.h"
#include "election/ElectionTimings.h"

namespace leasehold::config {

enum class LogFormat { Text, Json };
enum class LogLevel { Debug, Info, Warn, Error };
enum class FollowerMode { Watch, Poll };
enum class RestartPolicy { Never, OnFailure, Always };
enum class Store { Kubernetes, Etcd, ZooKeeper };

std::string_view toString(LogFormat format);
std::string_view toString(LogLevel level);
std::string_view toString(FollowerMode mode);
std::string_view toString(RestartPolicy policy);
std::string_view toString(Store store);

struct Config {
  std::string leaseName;  // required; DNS-1123 subdomain (with --store etcd: the election's name)
  // Unset: main resolves $POD_NAMESPACE, else the cluster access's namespace (the
  // service-account namespace file in-cluster, the context's from a kubeconfig), else "default".
  std::optional<std::string> leaseNamespace;
  std::string identity;  // default: $POD_NAME (else hostname) + "_" + 8 random hex digits
  // This replica's pod, written on the Lease it holds and shown as /leader's "name": $POD_NAME;
  // without it the hostname (Kubernetes sets it to the pod name) unless an identity was given,
  // which then stands for the replica as contrib leader-elector's --id did. Not a setting.
  std::string podName;
  election::ElectionTimings timings;  // --lease-duration, --renew-deadline, --retry-period
  // After releasing the lease (graceful shutdown of a leader) how long this identity stays away
  // from it; default: the lease duration.
  time::Duration releaseCooldown = std::chrono::seconds(15);
  std::optional<std::string> kubeconfig;
  std::optional<std::string> context;
  ListenAddress httpAddress{"127.0.0.1", 4040};
  ListenAddress probeAddress{"0.0.0.0", 9102};
  std::string statusFile;                 // empty: no status file
  std::string podLabel;                   // empty: do not label the pod
  std::optional<std::string> configFile;  // the YAML file that was read, if any
  LogFormat logFormat = LogFormat::Text;
  LogLevel logLevel = LogLevel::Info;
  FollowerMode followerMode = FollowerMode::Watch;
  bool printConfig = false;  // print the effective configuration and exit

  // Shard mode (--shards N, docs/design.md "Shards"): N shard Leases NAME-0 .. NAME-(N-1)
  // balanced over the replicas of the group NAME; 0 = off. --shard-drain: how long a shard
  // this replica no longer owns (not in /shards) stays held before it is released.
  std::size_t shards = 0;
  time::Duration shardDrain{};
  // --coordinated: publish a LeaseCandidate and follow the API server's coordinated leader
  // election (the identity is its name, so it must be a DNS-1123 subdomain; the default one
  // then joins with '-' instead of '_').
  bool coordinated = false;
  // --fast-failover (docs/design.md, "Fast failover"): record this replica's pod UID and
  // container on the Lease it holds ($POD_UID, $LEASEHOLD_CONTAINER), and take over from a
  // holder before its Lease expires once the kubelet reports that the holder's process exited.
  // Needs get/list/watch on pods; Kubernetes only, one Lease (no --shards), no --coordinated,
  // and no --status-file (a file outlives its writer).
  bool fastFailover = false;
  // --coordinated-version: what the LeaseCandidate announces (binaryVersion, emulationVersion);
  // empty: leasehold's own version.
  std::string coordinatedVersion;

  // --store etcd: the lock lives in etcd v3 (etcd/EtcdCampaign) instead of a Lease. The TLS
  // material and the password are files, read at start; the password never reaches the
  // Config (it may be printed).
  Store store = Store::Kubernetes;
  std::vector<std::string> etcdEndpoints;  // http:// or https:// URLs
  std::string etcdCacert;
  std::string etcdCert;
  std::string etcdKey;
  std::string etcdUser;
  std::string etcdPasswordFile;

  // --store zookeeper: the lock is an ephemeral-sequential node under /NAME in ZooKeeper
  // (zookeeper/ZkCampaign, kazoo's Election layout). Files as for etcd; the password never
  // reaches the Config.
  std::string zkServers;  // HOST:PORT[,HOST:PORT...][/CHROOT], parsed by zookeeper/ZkSession
  // The session timeout asked of the servers; nullopt: zkSessionTimeoutOf() below.
  std::optional<time::Duration> zkSessionTimeout;
  // L: how long a ZooKeeper server cut off from its ensemble's leader may go on answering
  // (its tickTime x (syncLimit + 1)); the claim needs session timeout >= R + L + I
  // (zkSessionTimeoutFloor).
  time::Duration zkServerLag = std::chrono::seconds(12);
  bool zkTls = false;  // TLS to the servers' secureClientPort (implied by the three below)
  std::string zkCacert;
  std::string zkCert;
  std::string zkKey;
  std::string zkUser;
  std::string zkPasswordFile;

  // Run mode, `leasehold run [flags] -- CMD [ARGS...]`: CMD runs only while this replica leads
  // (supervise::Supervisor). The settings below are rejected without it.
  bool runMode = false;
  std::vector<std::string> command;  // what follows --; never printed (it may carry secrets)
  // SIGTERM to SIGKILL when leadership ends; less than the renew deadline. Default: half the
  // renew deadline, at most 5 s.
  time::Duration killGrace = std::chrono::seconds(5);
  // SIGTERM/SIGINT to leasehold: how long the command may take before SIGKILL (fits a 30 s
  // terminationGracePeriodSeconds).
  time::Duration drainTimeout = std::chrono::seconds(25);
  RestartPolicy restart = RestartPolicy::Never;  // when the command exits on its own
  bool exitOnLoss = false;  // exit (non-zero) after a lost term instead of competing again
};

// The shortest session timeout with which the servers cannot expire a session before its claim
// ends (docs/design.md, "The ZooKeeper store"): R + L + the longest time between two requests of
// the candidate, max(I, P) (the ensemble's leader hears of a session's requests at a follower
// only in the follower's next report, which lists the sessions active since the last one).
time::Duration zkSessionTimeoutFloor(const Config& config);
// --store zookeeper's session timeout: --zk-session-timeout, else D, or the floor above when
// that is longer.
time::Duration zkSessionTimeoutOf(const Config& config);

// The defaults that main settles only once the cluster access is known, here so that tests can
// hold them to what --help says.
// This pod's namespace: $POD_NAMESPACE (`podNamespaceVariable`, empty when unset), else the
// cluster access's (RestConfig::defaultNamespace), else "default".
std::string podNamespace(std::string_view podNamespaceVariable,
                         const std::optional<std::string>& accessNamespace);
// The Lease's namespace: --lease-namespace, else this pod's.
std::string leaseNamespace(const Config& config, const std::string& podNamespace);
// The version a --coordinated replica announces: --coordinated-version, else leasehold's own.
std::string announcedVersion(const Config& config);

}  // namespace leasehold::config

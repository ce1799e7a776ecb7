// Flags, environment and the YAML file into one validated Config (contract in ConfigLoader.h).
// Why ~1,100 lines: one table of every setting (--store etcd's and zookeeper's included) (flag,
// variable, file key, parser, validation) and the precedence rules over it, run mode's settings and
// `run ... -- CMD` included; the parsers and checks that are not specific to this table live in
// their own files (DurationParser, ListenAddress, KubernetesNameRules, Utf8, ConfigFile).
#include "config/ConfigLoader.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstdio>
#include <optional>
#include <random>
#include <set>

#include "config/CompatibilityFlags.h"
#include "config/ConfigFile.h"
#include "config/DurationParser.h"
#include "config/KubernetesNameRules.h"
#include "config/ListenAddress.h"
#include "config/Utf8.h"

extern char** environ;

namespace leasehold::config {

namespace {

enum class ValueKind { Text, Duration, Boolean, Address, Choice };

// Stores one value into the Config; returns what is wrong with it (without saying where it came
// from: the caller adds that).
using Apply = std::function<std::optional<std::string>(Config&, const std::string&)>;

struct Setting {
  std::string flag;     // "lease-name"; the environment variable is derived from it
  std::string fileKey;  // "leaseName"
  ValueKind kind;
  std::string typeName;  // for --help
  std::string help;
  Apply apply;
};

std::optional<std::string> parseBoolean(const std::string& text, bool& out) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "true" || lower == "1" || lower == "yes") {
    out = true;
    return std::nullopt;
  }
  if (lower == "false" || lower == "0" || lower == "no") {
    out = false;
    return std::nullopt;
  }
  return "\"" + text + "\" is not a boolean (use true or false)";
}

Apply text(std::string Config::*member) {
  return [member](Config& c, const std::string& value) -> std::optional<std::string> {
    c.*member = value;
    return std::nullopt;
  };
}

Apply optionalText(std::optional<std::string> Config::*member) {
  return [member](Config& c, const std::string& value) -> std::optional<std::string> {
    if (value.empty()) {
      (c.*member).reset();
    } else {
      c.*member = value;
    }
    return std::nullopt;
  };
}

Apply duration(std::function<time::Duration&(Config&)> field) {
  return [field](Config& c, const std::string& value) -> std::optional<std::string> {
    auto parsed = DurationParser::parse(value);
    if (auto* error = std::get_if<ConfigError>(&parsed)) return error->message;
    field(c) = std::get<time::Duration>(parsed);
    return std::nullopt;
  };
}

Apply address(ListenAddress Config::*member) {
  return [member](Config& c, const std::string& value) -> std::optional<std::string> {
    auto parsed = ListenAddress::parse(value);
    if (auto* error = std::get_if<ConfigError>(&parsed)) return error->message;
    c.*member = std::get<ListenAddress>(parsed);
    return std::nullopt;
  };
}

template <class Enum>
Apply choice(Enum Config::*member, std::vector<Enum> values) {
  return [member, values](Config& c, const std::string& value) -> std::optional<std::string> {
    std::string names;
    for (const Enum candidate : values) {
      if (value == toString(candidate)) {
        c.*member = candidate;
        return std::nullopt;
      }
      names += (names.empty() ? "" : ", ") + std::string(toString(candidate));
    }
    return "\"" + value + "\" is not one of " + names;
  };
}

Apply boolean(bool Config::*member) {
  return [member](Config& c, const std::string& value) -> std::optional<std::string> {
    return parseBoolean(value, c.*member);
  };
}

// The order here is the order of --help.
const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = {
      {"lease-name", "leaseName", ValueKind::Text, "NAME",
       "Name of the Lease object to compete for (required)", text(&Config::leaseName)},
      {"lease-namespace", "leaseNamespace", ValueKind::Text, "NAMESPACE",
       "Namespace of the Lease (default: $POD_NAMESPACE, else the namespace of the cluster "
       "access in use: the service account's in-cluster, the context's from a kubeconfig; else "
       "\"default\")",
       optionalText(&Config::leaseNamespace)},
      {"identity", "identity", ValueKind::Text, "ID",
       "This candidate's identity (default: $POD_NAME or the hostname, plus _ and 8 random hex "
       "digits; - instead of _ with --coordinated)",
       text(&Config::identity)},
      {"lease-duration", "leaseDuration", ValueKind::Duration, "DURATION",
       "How long followers wait after the last renewal before taking over (default 15s)",
       duration([](Config& c) -> time::Duration& { return c.timings.leaseDuration; })},
      {"renew-deadline", "renewDeadline", ValueKind::Duration, "DURATION",
       "How long the leader keeps claiming leadership without a successful renewal (default 10s)",
       duration([](Config& c) -> time::Duration& { return c.timings.renewDeadline; })},
      {"retry-period", "retryPeriod", ValueKind::Duration, "DURATION",
       "How often the leader renews and a polling follower retries (default 2s)",
       duration([](Config& c) -> time::Duration& { return c.timings.retryPeriod; })},
      {"renew-interval", "renewInterval", ValueKind::Duration, "DURATION",
       "How often the leader renews after a successful renewal; after a failed one it retries "
       "every --retry-period. Longer means fewer writes at the same lease duration; it + the "
       "request timeout (half of --renew-deadline within 0.5s..5s) + --retry-period must be at "
       "most --renew-deadline (default: the retry period)",
       [](Config& c, const std::string& value) -> std::optional<std::string> {
         if (value.empty()) {
           c.timings.renewInterval.reset();
           return std::nullopt;
         }
         auto parsed = DurationParser::parse(value);
         if (auto* error = std::get_if<ConfigError>(&parsed)) return error->message;
         c.timings.renewInterval = std::get<time::Duration>(parsed);
         return std::nullopt;
       }},
      {"release-cooldown", "releaseCooldown", ValueKind::Duration, "DURATION",
       "After releasing the lease, how long this identity stays away from it (default: the "
       "lease duration)",
       duration([](Config& c) -> time::Duration& { return c.releaseCooldown; })},
      {"kubeconfig", "kubeconfig", ValueKind::Text, "PATH",
       "kubeconfig file (default: $KUBECONFIG, else in-cluster with the pod's service account, "
       "else ~/.kube/config)",
       optionalText(&Config::kubeconfig)},
      {"context", "context", ValueKind::Text, "NAME", "kubeconfig context to use",
       optionalText(&Config::context)},
      {"http-address", "httpAddress", ValueKind::Address, "HOST:PORT",
       "Status API (/leader, /leader/watch) listen address (default 127.0.0.1:4040)",
       address(&Config::httpAddress)},
      {"probe-address", "probeAddress", ValueKind::Address, "HOST:PORT",
       "Probe server (/healthz, /readyz, /metrics) listen address (default 0.0.0.0:9102)",
       address(&Config::probeAddress)},
      {"status-file", "statusFile", ValueKind::Text, "PATH",
       "Write the leader status JSON to this file on every change (default: off)",
       text(&Config::statusFile)},
      {"pod-label", "podLabel", ValueKind::Text, "KEY",
       "Keep KEY=true|false on this pod's labels (needs POD_NAME, POD_NAMESPACE; default: off)",
       text(&Config::podLabel)},
      {"follower-mode", "followerMode", ValueKind::Choice, "watch|poll",
       "How followers notice changes: watch the Lease, or poll it every retry period (default "
       "watch)",
       choice(&Config::followerMode, {FollowerMode::Watch, FollowerMode::Poll})},
      {"coordinated", "coordinated", ValueKind::Boolean, "",
       "Publish a LeaseCandidate and let the API server's coordinated-leader-election controller "
       "pick the leader instead of competing (needs the CoordinatedLeaderElection feature gate; "
       "default: off)",
       boolean(&Config::coordinated)},
      {"fast-failover", "fastFailover", ValueKind::Boolean, "",
       "Take over from a holder whose process the kubelet reports exited (its container "
       "terminated after its term began) instead of waiting for its Lease to expire; the holder "
       "records its pod and container from POD_NAME, POD_UID and LEASEHOLD_CONTAINER. Needs "
       "get/list/watch on pods; not with --status-file, --shards, --coordinated (default: off)",
       boolean(&Config::fastFailover)},
      {"coordinated-version", "coordinatedVersion", ValueKind::Text, "X.Y.Z",
       "With --coordinated: the version this replica announces; the controller elects the "
       "oldest, so during a rollout the old version leads until none is left (default: "
       "leasehold's version)",
       text(&Config::coordinatedVersion)},
      {"log-format", "logFormat", ValueKind::Choice, "text|json", "Log format (default text)",
       choice(&Config::logFormat, {LogFormat::Text, LogFormat::Json})},
      {"log-level", "logLevel", ValueKind::Choice, "debug|info|warn|error",
       "Least severe level to log (default info)",
       choice(&Config::logLevel,
              {LogLevel::Debug, LogLevel::Info, LogLevel::Warn, LogLevel::Error})},
      {"print-config", "printConfig", ValueKind::Boolean, "",
       "Print the effective configuration as YAML and exit", boolean(&Config::printConfig)},
      {"shards", "shards", ValueKind::Text, "N",
       "Shard mode: N shard locks (1-1024), the Leases NAME-0 .. NAME-(N-1) (with --store etcd "
       "the elections NAME/shards/0 .. NAME/shards/(N-1); with --store zookeeper the elections "
       "/NAME/shards/0 .. /NAME/shards/(N-1)), balanced over the replicas that run "
       "with the same --lease-name; GET /shards says which this replica owns (default: off)",
       [](Config& c, const std::string& value) -> std::optional<std::string> {
         std::size_t n = 0;
         const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
         if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 1024) {
           return "\"" + value + "\" is not a whole number from 1 to 1024";
         }
         c.shards = n;
         return std::nullopt;
       }},
      {"shard-drain", "shardDrain", ValueKind::Duration, "DURATION",
       "Shard mode: a shard that moves away is dropped from /shards at once and released this "
       "much later (default 0s)",
       duration([](Config& c) -> time::Duration& { return c.shardDrain; })},
      {"store", "store", ValueKind::Choice, "kubernetes|etcd|zookeeper",
       "Where the lock lives: a Kubernetes Lease, an election in etcd v3 (etcd's own layout, "
       "NAME/<lease id>, shared with `etcdctl elect NAME`), or in ZooKeeper (kazoo's Election "
       "layout under the path /NAME, shared with kazoo's `Election(\"/NAME\")`; default "
       "kubernetes)",
       choice(&Config::store, {Store::Kubernetes, Store::Etcd, Store::ZooKeeper})},
      {"etcd-endpoints", "etcdEndpoints", ValueKind::Text, "URL[,URL...]",
       "With --store etcd: the members' client URLs, http:// or https:// (required)",
       [](Config& c, const std::string& value) -> std::optional<std::string> {
         c.etcdEndpoints.clear();
         std::size_t from = 0;
         while (from <= value.size()) {
           const auto comma = std::min(value.find(',', from), value.size());
           std::string url = value.substr(from, comma - from);
           url.erase(0, url.find_first_not_of(' '));
           url.erase(url.find_last_not_of(' ') + 1);
           if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
             return "\"" + url + "\" is not an http:// or https:// URL";
           }
           if (url.find_first_of("?#") != std::string::npos) {
             return "\"" + url + "\": a query or fragment has no meaning here";
           }
           c.etcdEndpoints.push_back(std::move(url));
           from = comma + 1;
         }
         return std::nullopt;
       }},
      {"etcd-cacert", "etcdCacert", ValueKind::Text, "PATH",
       "With --store etcd: verify the members' certificates against this CA bundle instead of "
       "the system's CA certificates",
       text(&Config::etcdCacert)},
      {"etcd-cert", "etcdCert", ValueKind::Text, "PATH",
       "With --store etcd: client certificate for TLS (with --etcd-key; default: off)",
       text(&Config::etcdCert)},
      {"etcd-key", "etcdKey", ValueKind::Text, "PATH",
       "With --store etcd: the client certificate's private key (default: off)",
       text(&Config::etcdKey)},
      {"etcd-user", "etcdUser", ValueKind::Text, "NAME",
       "With --store etcd: authenticate as this etcd user, with the password from "
       "--etcd-password-file (default: off)",
       text(&Config::etcdUser)},
      {"etcd-password-file", "etcdPasswordFile", ValueKind::Text, "PATH",
       "With --store etcd: the file holding --etcd-user's password (one line; never a flag "
       "value; default: off)",
       text(&Config::etcdPasswordFile)},
      {"zk-servers", "zkServers", ValueKind::Text, "HOST:PORT[,HOST:PORT...][/CHROOT]",
       "With --store zookeeper: the servers' client addresses (the session moves to the next "
       "when one fails), and optionally a chroot every path is under (required)",
       text(&Config::zkServers)},
      {"zk-session-timeout", "zkSessionTimeout", ValueKind::Duration, "DURATION",
       "With --store zookeeper: the session timeout asked of the servers: a crashed leader's "
       "node goes this long after the servers last heard from it; at least --renew-deadline + "
       "--zk-server-lag + --renew-interval (or --retry-period when longer) (default: "
       "--lease-duration, or that sum when it is longer)",
       [](Config& c, const std::string& value) -> std::optional<std::string> {
         auto parsed = DurationParser::parse(value);
         if (auto* error = std::get_if<ConfigError>(&parsed)) return error->message;
         c.zkSessionTimeout = std::get<time::Duration>(parsed);
         return std::nullopt;
       }},
      {"zk-server-lag", "zkServerLag", ValueKind::Duration, "DURATION",
       "With --store zookeeper: how long a server cut off from its ensemble's leader may go on "
       "answering: the servers' tickTime x (syncLimit + 1), 12s for ZooKeeper's sample "
       "zoo.cfg (tickTime 2000, syncLimit 5), 0s for a single server (default 12s)",
       duration([](Config& c) -> time::Duration& { return c.zkServerLag; })},
      {"zk-tls", "zkTls", ValueKind::Boolean, "",
       "With --store zookeeper: TLS to the servers' secureClientPort, verified against the "
       "system's CA certificates or --zk-cacert; on with --zk-cacert or --zk-cert (default: "
       "off)",
       boolean(&Config::zkTls)},
      {"zk-cacert", "zkCacert", ValueKind::Text, "PATH",
       "With --store zookeeper: TLS, verifying the servers' certificates against this CA bundle",
       text(&Config::zkCacert)},
      {"zk-cert", "zkCert", ValueKind::Text, "PATH",
       "With --store zookeeper: TLS with this client certificate (with --zk-key; default: off)",
       text(&Config::zkCert)},
      {"zk-key", "zkKey", ValueKind::Text, "PATH",
       "With --store zookeeper: the client certificate's private key (default: off)",
       text(&Config::zkKey)},
      {"zk-user", "zkUser", ValueKind::Text, "NAME",
       "With --store zookeeper: digest authentication as this user, with the password from "
       "--zk-password-file; the nodes it creates are then for this user alone, without it open "
       "to every client (default: off)",
       text(&Config::zkUser)},
      {"zk-password-file", "zkPasswordFile", ValueKind::Text, "PATH",
       "With --store zookeeper: the file holding --zk-user's password (one line; never a flag "
       "value; default: off)",
       text(&Config::zkPasswordFile)},
      // Run mode only (kRunOnly).
      {"kill-grace", "killGrace", ValueKind::Duration, "DURATION",
       "When leadership ends, SIGTERM to the command's process group, SIGKILL this much later; "
       "less than --renew-deadline (default: half of it, at most 5s)",
       duration([](Config& c) -> time::Duration& { return c.killGrace; })},
      {"drain-timeout", "drainTimeout", ValueKind::Duration, "DURATION",
       "On SIGTERM/SIGINT, how long the command may take to exit before SIGKILL; the lease is "
       "renewed meanwhile and released after (default 25s)",
       duration([](Config& c) -> time::Duration& { return c.drainTimeout; })},
      {"restart", "restart", ValueKind::Choice, "never|on-failure|always",
       "When the command exits on its own while leading: release and exit with its status "
       "(never), or start it again in the same term after 1s..30s (default never)",
       choice(&Config::restart,
              {RestartPolicy::Never, RestartPolicy::OnFailure, RestartPolicy::Always})},
      {"exit-on-loss", "exitOnLoss", ValueKind::Boolean, "",
       "After a lost term exit with status 3 (Kubernetes restarts the container) instead of "
       "competing again",
       boolean(&Config::exitOnLoss)},
  };
  return table;
}

// The settings of `leasehold run`: rejected without it.
const std::set<std::string>& runOnly() {
  static const std::set<std::string> flags = {"kill-grace", "drain-timeout", "restart",
                                              "exit-on-loss"};
  return flags;
}

constexpr const char* kRunUsage = "leasehold run [flags] -- CMD [ARGS...]";

const char* expectedInFile(ValueKind kind) {
  switch (kind) {
    case ValueKind::Duration:
      return "a duration such as 15s";
    case ValueKind::Boolean:
      return "true or false";
    case ValueKind::Address:
      return "host:port";
    default:
      return "a string";
  }
}

const char* shapeName(ConfigFileEntry::Shape shape) {
  switch (shape) {
    case ConfigFileEntry::Shape::List:
      return "a list";
    case ConfigFileEntry::Shape::Map:
      return "a map";
    case ConfigFileEntry::Shape::Null:
      return "null";
    default:
      return "a scalar";
  }
}

// Levenshtein distance, to suggest the key that was probably meant.
std::size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string unknownKeyMessage(const std::string& key) {
  std::string best;
  std::size_t bestDistance = 4;  // suggest only close matches
  const auto consider = [&](const std::string& candidate) {
    const std::size_t d = editDistance(key, candidate);
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate;
    }
  };
  for (const auto& setting : settings())
    consider(setting.fileKey);
  for (const auto& compatible : compatibilityFlags())
    consider(compatible.fileKey);
  std::string message = "unknown key";
  if (!best.empty()) message += " (did you mean " + best + "?)";
  return message;
}

// MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], numbers without leading zeros: what the API server's
// semver.Parse accepts in a LeaseCandidate (no leading v, all three numbers).
bool isSemanticVersion(const std::string& v) {
  std::size_t i = 0;
  for (int part = 0; part < 3; ++part) {
    const std::size_t start = i;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])))
      ++i;
    if (i == start || (i - start > 1 && v[start] == '0')) return false;
    if (part < 2 && (i >= v.size() || v[i++] != '.')) return false;
  }
  if (i == v.size()) return true;
  if (v[i] != '-' && v[i] != '+') return false;
  const auto ident = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  };
  for (std::size_t j = i + 1; j < v.size(); ++j) {
    if (!ident(v[j]) && v[j] != '+') return false;
  }
  return i + 1 < v.size() && v.back() != '.';
}

// What is wrong with NAME as the path /NAME of a ZooKeeper node, or nullopt: ZooKeeper's
// PathUtils rules (no empty, "." or ".." component, no control or private-use characters), and
// not under /zookeeper, which the servers keep for themselves.
std::optional<std::string> zooKeeperPathProblem(const std::string& name) {
  if (name.front() == '/' || name.back() == '/') return "must not begin or end with '/'";
  if (!isValidUtf8(name)) return "is not UTF-8";
  if (name == "zookeeper" || name.rfind("zookeeper/", 0) == 0) {
    return "is under /zookeeper, which the servers keep for themselves";
  }
  std::size_t from = 0;
  while (from <= name.size()) {
    const auto slash = std::min(name.find('/', from), name.size());
    const auto part = name.substr(from, slash - from);
    if (part.empty()) return "has an empty path component ('//')";
    if (part == "." || part == "..") return "has a '.' or '..' path component";
    from = slash + 1;
  }
  if (std::any_of(name.begin(), name.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return "has a control character";
  }
  return std::nullopt;
}

// Checks that need the merged values. `origins` says where each set value came from.
void validate(const Config& config, const std::map<std::string, std::string>& origins,
              const std::set<std::string>& unparsed, std::vector<std::string>& problems) {
  const auto name = [&](const std::string& flag) {
    const auto it = origins.find(flag);
    std::string text = "--" + flag;
    if (it != origins.end() && it->second != text) text += " (from " + it->second + ")";
    return text;
  };
  const bool etcd = config.store == Store::Etcd;
  const bool zookeeper = config.store == Store::ZooKeeper;
  if (config.leaseName.empty() && !unparsed.contains("lease-name")) {
    problems.push_back("--lease-name is required (or " +
                       ConfigLoader::environmentName("lease-name") +
                       ", or leaseName in the config file)");
  } else if (etcd) {
    // etcd keys are bytes; the name must only be one that `etcdctl elect NAME` can name too.
    if (config.leaseName.back() == '/' || !isValidUtf8(config.leaseName) ||
        std::any_of(config.leaseName.begin(), config.leaseName.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
      problems.push_back(name("lease-name") + " with " + name("store") + " etcd: \"" +
                         config.leaseName +
                         "\" must be printable UTF-8 and not end with '/' (the election's keys "
                         "are NAME/<lease id>)");
    }
  } else if (zookeeper) {
    const auto problem =
        config.leaseName.empty() ? std::nullopt : zooKeeperPathProblem(config.leaseName);
    if (problem) {
      problems.push_back(name("lease-name") + " with " + name("store") + " zookeeper: \"" +
                         config.leaseName + "\" " + *problem +
                         " (the election's path is /NAME under the chroot)");
    }
  } else if (!config.leaseName.empty()) {
    if (auto problem = KubernetesNameRules::dns1123Subdomain(config.leaseName)) {
      problems.push_back(name("lease-name") + ": \"" + config.leaseName + "\" " + *problem);
    }
  }
  if (config.leaseNamespace) {
    if (auto problem = KubernetesNameRules::dns1123Label(*config.leaseNamespace)) {
      problems.push_back(name("lease-namespace") + ": \"" + *config.leaseNamespace + "\" " +
                         *problem);
    }
  }
  if (config.identity.empty() && !unparsed.contains("identity"))
    problems.push_back(name("identity") + ": must not be empty");
  if (!config.coordinatedVersion.empty() || unparsed.contains("coordinated-version")) {
    if (!config.coordinated) {
      problems.push_back(name("coordinated-version") + ": only with --coordinated");
    } else if (!isSemanticVersion(config.coordinatedVersion)) {
      problems.push_back(name("coordinated-version") + ": \"" + config.coordinatedVersion +
                         "\" is not a semantic version MAJOR.MINOR.PATCH (such as 1.4.0, no "
                         "leading v), which the API server requires of a LeaseCandidate");
    }
  }
  if (config.coordinated && !config.identity.empty()) {
    // The controller writes the LeaseCandidate's name into holderIdentity.
    if (auto problem = KubernetesNameRules::dns1123Subdomain(config.identity)) {
      problems.push_back(name("identity") + ": \"" + config.identity + "\" " + *problem + ", but " +
                         name("coordinated") +
                         " names this replica's LeaseCandidate after it; give an --identity "
                         "of lowercase letters, digits, '-' and '.'");
    }
  }
  if (config.fastFailover && config.coordinated) {
    problems.push_back(name("fast-failover") + " cannot be used with " + name("coordinated") +
                       " (the API server's controller names the holder)");
  }
  if (config.fastFailover && !config.statusFile.empty()) {
    problems.push_back(
        name("fast-failover") + " cannot be used with " + name("status-file") +
        ": a file outlives the process that wrote it, so after a crash its reader would trust "
        "validUntil for up to the renew deadline while another replica already leads; read "
        "/leader/watch, whose stream ends when this process does");
  }
  if (!config.podLabel.empty()) {
    if (auto problem = KubernetesNameRules::labelKey(config.podLabel)) {
      problems.push_back(name("pod-label") + ": \"" + config.podLabel +
                         "\" is not a valid label key: " + *problem);
    }
  }
  // A timing that did not parse has already been reported; comparing the default in its place
  // would only add a confusing second message.
  const bool timingsParsed =
      !unparsed.contains("lease-duration") && !unparsed.contains("renew-deadline") &&
      !unparsed.contains("retry-period") && !unparsed.contains("renew-interval");
  if (config.runMode) {
    if (config.command.empty() || config.command.front().empty()) {
      problems.push_back(std::string("leasehold run: no command after -- (") + kRunUsage + ")");
    }
    if (!unparsed.contains("kill-grace") && !unparsed.contains("renew-deadline")) {
      if (config.killGrace <= time::Duration::zero()) {
        problems.push_back(name("kill-grace") + ": must be more than 0");
      } else if (config.killGrace >= config.timings.renewDeadline) {
        problems.push_back(name("kill-grace") + " must be less than " + name("renew-deadline") +
                           ": " + time::formatDuration(config.killGrace) + " is not less than " +
                           time::formatDuration(config.timings.renewDeadline) +
                           " (the command must be stopped before the claim ends)");
      } else if (timingsParsed && config.timings.renewInterval &&
                 *config.timings.renewInterval + config.timings.requestDeadline() +
                         config.timings.retryPeriod >
                     config.timings.renewDeadline - config.killGrace) {
        // The command is told to stop kill-grace before the claim ends: a renewal that fails
        // at I must leave a retry before that, or every lost request would stop the command.
        problems.push_back(
            name("renew-interval") + " (" + time::formatDuration(*config.timings.renewInterval) +
            ") + the request timeout (" + time::formatDuration(config.timings.requestDeadline()) +
            ") + " + name("retry-period") + " (" +
            time::formatDuration(config.timings.retryPeriod) + ") must be at most " +
            name("renew-deadline") + " - " + name("kill-grace") + " (" +
            time::formatDuration(config.timings.renewDeadline - config.killGrace) +
            ") in run mode: the command is stopped kill-grace before the claim ends");
      }
    }
    if (!unparsed.contains("drain-timeout") && config.drainTimeout <= time::Duration::zero()) {
      problems.push_back(name("drain-timeout") + ": must be more than 0");
    }
  } else {
    for (const auto& flag : runOnly()) {
      if (origins.contains(flag) || unparsed.contains(flag)) {
        problems.push_back(name(flag) + ": only for " + kRunUsage);
      }
    }
  }
  // What only a Kubernetes Lease has: each named, for the other stores.
  if (etcd || zookeeper) {
    std::string clash;
    const auto refuse = [&](const std::string& flag, bool set) {
      if (set) clash += (clash.empty() ? "" : ", ") + name(flag);
    };
    refuse("lease-namespace", config.leaseNamespace.has_value());
    refuse("kubeconfig", config.kubeconfig.has_value());
    refuse("context", config.context.has_value());
    refuse("pod-label", !config.podLabel.empty());
    refuse("follower-mode", config.followerMode == FollowerMode::Poll);
    refuse("coordinated", config.coordinated);
    refuse("fast-failover", config.fastFailover);
    if (!clash.empty()) {
      problems.push_back(name("store") + " " + std::string(toString(config.store)) +
                         " cannot be used with " + clash + " (Kubernetes only)");
    }
  }
  if (zookeeper) {
    if (config.zkServers.empty() && !unparsed.contains("zk-servers")) {
      problems.push_back(name("store") + " zookeeper needs " + name("zk-servers"));
    }
    if (config.zkCert.empty() != config.zkKey.empty()) {
      problems.push_back(name(config.zkCert.empty() ? "zk-key" : "zk-cert") +
                         ": only together with " +
                         name(config.zkCert.empty() ? "zk-cert" : "zk-key"));
    }
    if (config.zkUser.empty() != config.zkPasswordFile.empty()) {
      problems.push_back(name(config.zkUser.empty() ? "zk-password-file" : "zk-user") +
                         ": only together with " +
                         name(config.zkUser.empty() ? "zk-user" : "zk-password-file"));
    }
    if (!unparsed.contains("zk-server-lag") && config.zkServerLag < time::Duration::zero()) {
      problems.push_back(name("zk-server-lag") + ": must not be negative");
    }
    if (!unparsed.contains("zk-session-timeout") && !unparsed.contains("zk-server-lag") &&
        timingsParsed) {
      const auto timeout = zkSessionTimeoutOf(config);
      const auto needed = zkSessionTimeoutFloor(config);
      if (timeout < needed) {
        problems.push_back(
            name("zk-session-timeout") + " (" + time::formatDuration(timeout) +
            ") must be at least " + name("renew-deadline") + " + " + name("zk-server-lag") +
            " + the longest time between two requests, " + name("renew-interval") + " or " +
            name("retry-period") + " (" + time::formatDuration(needed) +
            "): the servers may expire the session that much sooner after the last answer, and "
            "the claim must end first");
      }
    }
  } else {
    for (const char* flag : {"zk-servers", "zk-session-timeout", "zk-server-lag", "zk-tls",
                             "zk-cacert", "zk-cert", "zk-key", "zk-user", "zk-password-file"}) {
      if (origins.contains(flag) || unparsed.contains(flag)) {
        problems.push_back(name(flag) + ": only with --store zookeeper");
      }
    }
  }
  if (etcd) {
    if (config.etcdEndpoints.empty() && !unparsed.contains("etcd-endpoints")) {
      problems.push_back(name("store") + " etcd needs " + name("etcd-endpoints"));
    }
    if (config.etcdCert.empty() != config.etcdKey.empty()) {
      problems.push_back(name(config.etcdCert.empty() ? "etcd-key" : "etcd-cert") +
                         ": only together with " +
                         name(config.etcdCert.empty() ? "etcd-cert" : "etcd-key"));
    }
    if (config.etcdUser.empty() != config.etcdPasswordFile.empty()) {
      problems.push_back(name(config.etcdUser.empty() ? "etcd-password-file" : "etcd-user") +
                         ": only together with " +
                         name(config.etcdUser.empty() ? "etcd-user" : "etcd-password-file"));
    }
  } else {
    for (const char* flag : {"etcd-endpoints", "etcd-cacert", "etcd-cert", "etcd-key", "etcd-user",
                             "etcd-password-file"}) {
      if (origins.contains(flag) || unparsed.contains(flag)) {
        problems.push_back(name(flag) + ": only with --store etcd");
      }
    }
  }
  if (config.shards > 0) {
    if (!config.leaseName.empty() && !etcd && !zookeeper) {
      if (auto problem = KubernetesNameRules::dns1123Label(config.leaseName)) {
        problems.push_back(name("lease-name") + " with " + name("shards") + ": \"" +
                           config.leaseName + "\" " + *problem +
                           " (it names the group: a label value and the prefix of NAME-i)");
      }
    }
    // What shard mode does not do (yet): each named, so the fix is obvious.
    std::string clash;
    const auto refuse = [&](const std::string& flag, bool set) {
      if (set) clash += (clash.empty() ? "" : ", ") + name(flag);
    };
    refuse("pod-label", !config.podLabel.empty());
    refuse("follower-mode", config.followerMode == FollowerMode::Poll);
    refuse("release-cooldown", origins.contains("release-cooldown"));
    refuse("coordinated", config.coordinated);
    refuse("fast-failover", config.fastFailover);
    if (!clash.empty()) problems.push_back(name("shards") + " cannot be used with " + clash);
    if (!unparsed.contains("shard-drain") && config.shardDrain < time::Duration::zero()) {
      problems.push_back(name("shard-drain") + ": must not be negative");
    }
  } else if (!unparsed.contains("shards") &&
             (origins.contains("shard-drain") || unparsed.contains("shard-drain"))) {
    problems.push_back(name("shard-drain") + ": only with --shards");
  }
  if (timingsParsed) {
    if (auto problem = config.timings.validate()) {
      // The message names leasehold's flags; say which other names they were given as.
      std::string given;
      for (const char* flag :
           {"lease-duration", "renew-deadline", "retry-period", "renew-interval"}) {
        const auto it = origins.find(flag);
        if (it == origins.end() || it->second == std::string("--") + flag) continue;
        given += (given.empty() ? "" : "; ") + std::string("--") + flag + " from " + it->second;
      }
      problems.push_back(*problem + (given.empty() ? "" : " (" + given + ")"));
    }
  }
}

// Where a value may come from, strongest first.
enum class Source { Flag, Environment, File };

// Whether two texts are the same value of a setting ("15s" and "15000ms" are).
bool sameValue(ValueKind kind, const std::string& a, const std::string& b) {
  if (a == b) return true;
  if (kind == ValueKind::Duration) {
    auto x = DurationParser::parse(a);
    auto y = DurationParser::parse(b);
    return std::holds_alternative<time::Duration>(x) && std::holds_alternative<time::Duration>(y) &&
           std::get<time::Duration>(x) == std::get<time::Duration>(y);
  }
  if (kind == ValueKind::Address) {
    auto x = ListenAddress::parse(a);
    auto y = ListenAddress::parse(b);
    return std::holds_alternative<ListenAddress>(x) && std::holds_alternative<ListenAddress>(y) &&
           std::get<ListenAddress>(x) == std::get<ListenAddress>(y);
  }
  return false;
}

// "-election=x" -> "--election=x" for the long flags we know: Go's flag package (k8s-elector)
// takes one dash or two, and its users' manifests have one. Anything else is left for CLI11.
std::string withTwoDashes(const std::string& arg,
                          const std::map<std::string, CLI::Option*>& known) {
  if (arg.size() < 3 || arg[0] != '-' || arg[1] == '-') return arg;
  const std::string name =
      arg.substr(1, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - 1);
  const bool isLong =
      known.contains(name) || name == "config" || name == "version" || name == "help";
  return isLong ? "-" + arg : arg;
}

std::string podNameFrom(const ConfigLoader::Environment& environment) {
  const auto podName = environment.find("POD_NAME");
  return podName != environment.end() ? podName->second : std::string();
}

// Coordinated mode joins with '-': the identity names a LeaseCandidate, and '_' is not allowed.
std::string defaultIdentity(const std::string& podName, const std::string& hostname,
                            const ConfigLoader::IdentitySources& sources, bool coordinated) {
  std::string base = podName.empty() ? hostname : podName;
  if (base.empty()) base = "leasehold";
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, coordinated ? "-%08x" : "_%08x",
                static_cast<unsigned>(sources.random32 ? sources.random32() : 0));
  return base + suffix;
}

}  // namespace

ConfigLoader::ConfigLoader(Environment environment, IdentitySources identity)
    : environment_(std::move(environment)), identity_(std::move(identity)) {}

std::string ConfigLoader::environmentName(const std::string& flag) {
  std::string name = kEnvironmentPrefix;
  for (const char c : flag) {
    name.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return name;
}

std::vector<ConfigLoader::SettingHelp> ConfigLoader::settingHelp() {
  std::vector<SettingHelp> help;
  for (const auto& setting : settings())
    help.push_back({setting.flag, setting.fileKey, setting.help, runOnly().contains(setting.flag)});
  return help;
}

ConfigLoader::Environment ConfigLoader::processEnvironment() {
  Environment environment;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string text(*entry);
    const auto equals = text.find('=');
    if (equals == std::string::npos) continue;
    environment.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  return environment;
}

ConfigLoader::IdentitySources ConfigLoader::systemIdentitySources() {
  return IdentitySources{
      [] {
        char name[HOST_NAME_MAX + 1] = {};
        if (::gethostname(name, sizeof name - 1) != 0) return std::string();
        return std::string(name);
      },
      [] {
        std::random_device device;
        return static_cast<std::uint32_t>(device());
      },
  };
}

ConfigOutcome ConfigLoader::load(int argc, const char* const* argv) const {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i)
    args.emplace_back(argv[i]);
  return load(args);
}

ConfigOutcome ConfigLoader::load(const std::vector<std::string>& args) const {
  CLI::App app{"leasehold: Kubernetes leader election for the container next to it", "leasehold"};
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.footer(
      "Every flag can also be set in the environment as LEASEHOLD_<FLAG> (e.g. "
      "LEASEHOLD_LEASE_NAME) or in the YAML file given by --config with camelCase keys (e.g. "
      "leaseName). Flags win over the environment, which wins over the file. A compatibility "
      "flag and the leasehold flag it stands for may both be given only with the same value. "
      "Long flags may also be written with one dash, as Go programs accept (-election=NAME). "
      "Run mode, leasehold run [flags] -- CMD [ARGS...], runs CMD only while this replica "
      "leads and stops it before another replica may lead. leasehold copy-self DEST copies this "
      "binary to DEST (run mode's init container; leasehold copy-self --help). leasehold "
      "scale-down --deployment NAME scales a Deployment to 0 and waits until its pods are gone "
      "(the chart's uninstall hook; leasehold scale-down --help).");

  std::map<std::string, std::string> flagText;
  std::map<std::string, bool> flagBoolean;
  std::map<std::string, CLI::Option*> options;
  const auto addOption = [&](const std::string& flag, bool isBoolean, const std::string& help,
                             const std::string& typeName) {
    options[flag] = isBoolean
                        ? app.add_flag("--" + flag, flagBoolean[flag], help)
                        : app.add_option("--" + flag, flagText[flag], help)->type_name(typeName);
    return options[flag];
  };
  for (const auto& setting : settings()) {
    auto* option =
        addOption(setting.flag, setting.kind == ValueKind::Boolean, setting.help, setting.typeName);
    if (runOnly().contains(setting.flag)) option->group(std::string("Run mode: ") + kRunUsage);
  }
  std::string configPath;
  auto* configOption =
      app.add_option("--config", configPath, "YAML configuration file (also LEASEHOLD_CONFIG)")
          ->type_name("PATH");
  bool version = false;
  app.add_flag("--version", version, "Print the version and exit");
  for (const auto& compatible : compatibilityFlags()) {
    addOption(compatible.flag, compatible.boolean, compatible.help, compatible.typeName)
        ->group(compatible.group);
  }

  // `run` first selects run mode; everything after the first -- is the command, untouched.
  bool runMode = false;
  std::vector<std::string> flagArgs = args;
  std::vector<std::string> command;
  if (!flagArgs.empty() && flagArgs.front() == "run") {
    runMode = true;
    flagArgs.erase(flagArgs.begin());
    const auto dashes = std::find(flagArgs.begin(), flagArgs.end(), "--");
    if (dashes != flagArgs.end()) {
      command.assign(dashes + 1, flagArgs.end());
      flagArgs.erase(dashes, flagArgs.end());
    }
  } else if (std::find(args.begin(), args.end(), "--") != args.end()) {
    return ConfigError{std::string("a command after -- needs run mode: ") + kRunUsage};
  }

  try {
    std::vector<std::string> reversed(flagArgs.rbegin(),
                                      flagArgs.rend());  // CLI11 wants them reversed
    for (auto& arg : reversed)
      arg = withTwoDashes(arg, options);
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return HelpRequested{app.help()};
  } catch (const CLI::CallForAllHelp&) {
    return HelpRequested{app.help("", CLI::AppFormatMode::All)};
  } catch (const CLI::ParseError& e) {
    return ConfigError{std::string(e.what()) + " (see --help)"};
  }
  if (version) return VersionRequested{};

  Config config;
  std::vector<std::string> problems;
  std::map<std::string, std::string> origins;  // flag -> where its value came from
  std::set<std::string> unparsed;              // flags whose value was rejected

  // The file, if any.
  std::optional<std::string> filePath;
  if (configOption->count() > 0) {
    filePath = configPath;
  } else if (const auto env = environment_.find(environmentName("config"));
             env != environment_.end() && !env->second.empty()) {
    filePath = env->second;
  }
  std::optional<ConfigFile> file;
  std::map<std::string, const ConfigFileEntry*> fileEntries;
  if (filePath) {
    auto read = ConfigFile::read(*filePath);
    if (auto* error = std::get_if<ConfigError>(&read)) return *error;
    file = std::move(std::get<ConfigFile>(read));
    config.configFile = filePath;
    for (const auto& entry : file->entries()) {
      const bool known =
          std::any_of(settings().begin(), settings().end(),
                      [&](const Setting& s) { return s.fileKey == entry.key; }) ||
          std::any_of(compatibilityFlags().begin(), compatibilityFlags().end(),
                      [&](const CompatibilityFlag& c) { return c.fileKey == entry.key; });
      if (!known) {
        problems.push_back(file->describe(entry) + ": " + unknownKeyMessage(entry.key));
        continue;
      }
      fileEntries[entry.key] = &entry;
    }
  }

  // One name's value in one source. nullopt: not set there. A value of nullopt inside: set but
  // unusable (already reported), so weaker sources must not be used either.
  struct Raw {
    std::string origin;
    std::optional<std::string> value;
  };
  const auto lookup = [&](Source source, const std::string& flag, const std::string& fileKey,
                          bool isBoolean, ValueKind kind) -> std::optional<Raw> {
    Raw raw;
    switch (source) {
      case Source::Flag:
        if (options.at(flag)->count() == 0) return std::nullopt;
        raw = {"--" + flag, isBoolean ? (flagBoolean[flag] ? "true" : "false") : flagText[flag]};
        break;
      case Source::Environment: {
        const auto env = environment_.find(environmentName(flag));
        if (env == environment_.end() || env->second.empty()) return std::nullopt;
        raw = {env->first, env->second};
        break;
      }
      case Source::File: {
        const auto entry = fileEntries.find(fileKey);
        if (entry == fileEntries.end()) return std::nullopt;
        const ConfigFileEntry& e = *entry->second;
        if (e.shape == ConfigFileEntry::Shape::Null) return std::nullopt;  // "key:": unset
        raw = {file->describe(e), e.scalar};
        if (e.shape != ConfigFileEntry::Shape::Scalar) {
          problems.push_back(raw.origin + ": expected " + expectedInFile(kind) + ", got " +
                             shapeName(e.shape));
          raw.value.reset();
          return raw;
        }
        break;
      }
    }
    if (!isValidUtf8(*raw.value)) {
      problems.push_back(raw.origin + ": not valid UTF-8");
      raw.value.reset();
    } else if (isBoolean && source != Source::Flag) {
      bool parsed = false;
      if (auto problem = parseBoolean(*raw.value, parsed)) {
        problems.push_back(raw.origin + ": " + *problem);
        raw.value.reset();
      } else {
        raw.value = parsed ? "true" : "false";
      }
    }
    return raw;
  };
  // A compatibility flag's value in its target's vocabulary, or nullopt (reported).
  const auto translate = [&](const CompatibilityFlag& compatible,
                             const Raw& raw) -> std::optional<std::string> {
    auto translated = compatible.translate(*raw.value);
    if (auto* error = std::get_if<ConfigError>(&translated)) {
      problems.push_back(raw.origin + ": " + error->message);
      return std::nullopt;
    }
    return std::get<std::string>(translated);
  };

  // Each setting from the strongest source that has it under any of its names. Within that
  // source its names must agree.
  std::optional<std::string> ttlOrigin;  // the lease duration came from --ttl
  for (const auto& setting : settings()) {
    struct Candidate {
      std::string origin;
      std::string given;  // as written, for messages
      std::string value;  // in this setting's vocabulary
      bool derivesTimings = false;
    };
    for (const Source source : {Source::Flag, Source::Environment, Source::File}) {
      std::vector<Candidate> candidates;
      bool present = false;
      bool rejected = false;
      if (auto raw = lookup(source, setting.flag, setting.fileKey,
                            setting.kind == ValueKind::Boolean, setting.kind)) {
        present = true;
        if (raw->value) {
          candidates.push_back({raw->origin, *raw->value, *raw->value});
        } else {
          rejected = true;
        }
      }
      for (const auto& compatible : compatibilityFlags()) {
        if (compatible.target != setting.flag) continue;
        auto raw =
            lookup(source, compatible.flag, compatible.fileKey, compatible.boolean, setting.kind);
        if (!raw) continue;
        present = true;
        std::optional<std::string> value;
        if (raw->value) value = translate(compatible, *raw);
        if (!value) {
          rejected = true;
          continue;
        }
        candidates.push_back({raw->origin, *raw->value, *value, compatible.derivesTimings});
      }
      if (!present) continue;
      if (rejected) {
        unparsed.insert(setting.flag);
        break;
      }
      bool agree = true;
      for (const auto& other : candidates) {
        if (sameValue(setting.kind, candidates.front().value, other.value)) continue;
        problems.push_back(candidates.front().origin + " \"" + candidates.front().given +
                           "\" and " + other.origin + " \"" + other.given +
                           "\" disagree: both set --" + setting.flag + "; give one of them");
        agree = false;
      }
      if (!agree) {
        unparsed.insert(setting.flag);
        break;
      }
      const Candidate& chosen = candidates.front();
      origins[setting.flag] = chosen.origin;
      for (const auto& c : candidates) {
        if (c.derivesTimings) ttlOrigin = c.origin;
      }
      if (auto problem = setting.apply(config, chosen.value)) {
        problems.push_back(chosen.origin + ": " + *problem);
        unparsed.insert(setting.flag);
      }
      break;
    }
  }
  // Compatibility flags that set nothing are only checked, from their strongest source.
  for (const auto& compatible : compatibilityFlags()) {
    if (!compatible.target.empty()) continue;
    for (const Source source : {Source::Flag, Source::Environment, Source::File}) {
      auto raw = lookup(source, compatible.flag, compatible.fileKey, compatible.boolean,
                        compatible.boolean ? ValueKind::Boolean : ValueKind::Text);
      if (!raw) continue;
      if (raw->value) translate(compatible, *raw);
      break;
    }
  }

  // Defaults that depend on other values.
  if (ttlOrigin && !unparsed.contains("lease-duration")) {
    const auto derived = ttlTimings(config.timings.leaseDuration);
    if (!origins.contains("renew-deadline") && !unparsed.contains("renew-deadline")) {
      config.timings.renewDeadline = derived.renewDeadline;
      origins["renew-deadline"] = *ttlOrigin;
    }
    if (!origins.contains("retry-period") && !unparsed.contains("retry-period")) {
      config.timings.retryPeriod = derived.retryPeriod;
      origins["retry-period"] = *ttlOrigin;
    }
  }
  const std::string podName = podNameFrom(environment_);
  const std::string hostname = identity_.hostname ? identity_.hostname() : std::string();
  if (!origins.contains("identity")) {
    config.identity = defaultIdentity(podName, hostname, identity_, config.coordinated);
  }
  // The pod name the Lease shows for this replica (and /leader's "name"): the hostname when
  // POD_NAME is not given, since Kubernetes makes it the pod name; but an identity that was
  // given says who this replica is, as contrib's --id did.
  config.podName = !podName.empty() ? podName : origins.contains("identity") ? "" : hostname;
  if (!origins.contains("release-cooldown")) config.releaseCooldown = config.timings.leaseDuration;
  config.runMode = runMode;
  config.command = command;
  if (!origins.contains("kill-grace")) {
    config.killGrace =
        std::min<time::Duration>(std::chrono::seconds(5), config.timings.renewDeadline / 2);
  }

  validate(config, origins, unparsed, problems);
  if (!problems.empty()) {
    std::string message;
    for (const auto& problem : problems)
      message += (message.empty() ? "" : "\n") + problem;
    return ConfigError{message};
  }
  return config;
}

}  // namespace leasehold::config

#include "config/CompatibilityFlags.h"

#include "config/DurationParser.h"

namespace leasehold::config {

namespace {

using Result = std::variant<std::string, ConfigError>;

const char* const kElectors =
    "Compatibility: kubernetes/contrib leader-elector, k8s-elector, nais/elector "
    "(docs/migration.md)";
const char* const kClientGo =
    "Compatibility: client-go leader-election flags (kube-controller-manager, "
    "controller-runtime)";

Result same(const std::string& value) {
  return value;
}

// Go's net/http listens on every interface for ":4040"; so does this alias.
Result goListenAddress(const std::string& value) {
  if (!value.empty() && value.front() == ':') return "0.0.0.0" + value;
  return value;
}

// A Lease stores whole seconds. Rounding up keeps followers waiting at least as long as the
// old elector's did (rounding down could let them take over before its leader stopped).
Result ttl(const std::string& value) {
  auto parsed = DurationParser::parse(value);
  if (auto* error = std::get_if<ConfigError>(&parsed)) return *error;
  const auto d = std::get<time::Duration>(parsed);
  if (d <= time::Duration::zero()) return ConfigError{"must be greater than 0"};
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(d);
  return std::to_string(seconds.count()) + "s";
}

Result leasesOnly(const std::string& value) {
  if (value == "leases") return value;
  if (value == "endpoints" || value == "configmaps" || value == "endpointsleases" ||
      value == "configmapsleases") {
    return ConfigError{"\"" + value +
                       "\" is not supported: leasehold locks a coordination.k8s.io/v1 Lease; "
                       "use leases (docs/migration.md: Endpoints and ConfigMap locks)"};
  }
  return ConfigError{"\"" + value + "\" is not a lock type (use leases)"};
}

Result electionOn(const std::string& value) {
  if (value == "true") return value;
  return ConfigError{
      "false is not supported: leasehold is the election (to run without one, run the app "
      "without the sidecar)"};
}

}  // namespace

const std::vector<CompatibilityFlag>& compatibilityFlags() {
  static const std::vector<CompatibilityFlag> table = {
      {"election", "election", "lease-name", false, "NAME", "Same as --lease-name", kElectors,
       same},
      {"election-namespace", "electionNamespace", "lease-namespace", false, "NAMESPACE",
       "Same as --lease-namespace", kElectors, same},
      {"namespace", "namespace", "lease-namespace", false, "NAMESPACE",
       "Same as --lease-namespace (k8s-elector)", kElectors, same},
      {"id", "id", "identity", false, "ID", "Same as --identity", kElectors, same},
      {"http", "http", "http-address", false, "HOST:PORT",
       "Same as --http-address; :PORT means 0.0.0.0:PORT, as in Go", kElectors, goListenAddress},
      {"ttl", "ttl", "lease-duration", false, "DURATION",
       "Sets --lease-duration D (rounded up to whole seconds) and, unless they are given, "
       "--renew-deadline D/2 and --retry-period D/4 (contrib's rule)",
       kElectors, ttl, true},
      {"use-cluster-credentials", "useClusterCredentials", "", true, "",
       "Accepted and ignored: without --kubeconfig or $KUBECONFIG the pod's service account is "
       "used anyway",
       kElectors, same},
      {"lock-type", "lockType", "", false, "leases",
       "Must be leases (k8s-elector); endpoints and configmaps locks are rejected", kElectors,
       leasesOnly},
      {"metrics-address", "metricsAddress", "probe-address", false, "HOST:PORT",
       "Same as --probe-address, which serves /metrics too (nais/elector)", kElectors,
       goListenAddress},
      {"leader-elect", "leaderElect", "", true, "",
       "Accepted: leasehold always takes part in the election; false is an error", kClientGo,
       electionOn},
      {"leader-elect-lease-duration", "leaderElectLeaseDuration", "lease-duration", false,
       "DURATION", "Same as --lease-duration", kClientGo, same},
      {"leader-elect-renew-deadline", "leaderElectRenewDeadline", "renew-deadline", false,
       "DURATION", "Same as --renew-deadline", kClientGo, same},
      {"leader-elect-retry-period", "leaderElectRetryPeriod", "retry-period", false, "DURATION",
       "Same as --retry-period", kClientGo, same},
      {"leader-elect-resource-name", "leaderElectResourceName", "lease-name", false, "NAME",
       "Same as --lease-name", kClientGo, same},
      {"leader-elect-resource-namespace", "leaderElectResourceNamespace", "lease-namespace", false,
       "NAMESPACE", "Same as --lease-namespace", kClientGo, same},
      {"leader-elect-resource-lock", "leaderElectResourceLock", "", false, "leases",
       "Must be leases; endpoints, configmaps and their *leases migration locks are rejected",
       kClientGo, leasesOnly},
  };
  return table;
}

TtlTimings ttlTimings(time::Duration leaseDuration) {
  return {leaseDuration / 2, leaseDuration / 4};
}

}  // namespace leasehold::config

#pragma once
// The flag names of the electors people run today, so that switching to leasehold means changing
// the image and keeping the args (docs/migration.md):
//   kubernetes/contrib leader-elector  --election --election-namespace --id --http --ttl
//                                      --use-cluster-credentials
//   vapor-ware/k8s-elector             the same plus --namespace, --lock-type
//   nais/elector                       --election --election-namespace --http --metrics-address
//   client-go (kube-controller-manager, controller-runtime)
//                                      --leader-elect --leader-elect-lease-duration
//                                      --leader-elect-renew-deadline --leader-elect-retry-period
//                                      --leader-elect-resource-name
//                                      --leader-elect-resource-namespace
//                                      --leader-elect-resource-lock
// Each is either another name for a leasehold flag (`target`) or a flag that sets nothing and is
// only checked (`target` empty: --leader-elect must not be false, a lock must be "leases"). They
// come from flags, LEASEHOLD_<NAME> and the YAML file like every other setting; ConfigLoader
// merges them and rejects an alias and its leasehold flag given with different values.
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "config/ConfigError.h"
#include "time/Time.h"

namespace leasehold::config {

struct CompatibilityFlag {
  std::string flag;      // "election"; LEASEHOLD_ELECTION in the environment
  std::string fileKey;   // "election"
  std::string target;    // the leasehold flag it sets ("lease-name"); empty: sets nothing
  bool boolean = false;  // given without a value (--leader-elect, --leader-elect=false)
  std::string typeName;  // for --help
  std::string help;
  std::string group;  // the --help heading
  // The value in the target's vocabulary (--ttl 1500ms -> "2s", --http :4040 ->
  // "0.0.0.0:4040"), or what is wrong with it. A boolean flag gets "true" or "false".
  std::function<std::variant<std::string, ConfigError>(const std::string&)> translate;
  // --ttl: when the lease duration comes from this flag, renew deadline and retry period not
  // given anywhere follow from it (ttlTimings).
  bool derivesTimings = false;
};

// In --help order.
const std::vector<CompatibilityFlag>& compatibilityFlags();

// contrib's rule for --ttl, kept because its users tuned their ttl for it: renew deadline D/2,
// retry period D/4. With D >= 1 s this always satisfies D > R > 1.2 x P > 0.
struct TtlTimings {
  time::Duration renewDeadline;
  time::Duration retryPeriod;
};
TtlTimings ttlTimings(time::Duration leaseDuration);

}  // namespace leasehold::config

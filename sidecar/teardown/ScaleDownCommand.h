#pragma once
// `leasehold scale-down --deployment NAME`: the chart's pre-delete hook (charts/leasehold,
// templates/uninstall-hook.yaml) runs it before helm uninstall deletes the Role, so that every
// sidecar of the example Deployment releases its Lease while it may still write it
// (teardown/DeploymentScaleDown.h says how). Dispatched by main.cpp before the configuration is
// read, like copy-self; no flag of the sidecar applies. The cluster is found the way the
// sidecar finds it (--kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config); one event loop,
// the ApiClient's resolver thread beside it.
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "teardown/DeploymentScaleDown.h"

namespace leasehold::teardown {

struct ScaleDownArgs {
  ScaleDownOptions options;  // options.ns "" = the kubeconfig's or the ServiceAccount's
  // Unset: found as the sidecar finds it ($KUBECONFIG, in-cluster, ~/.kube/config).
  std::optional<std::string> kubeconfig;
  std::optional<std::string> context;
  bool help = false;
};

class ScaleDownCommand {
 public:
  static constexpr const char* kName = "scale-down";
  static constexpr const char* kUsage =
      "leasehold scale-down --deployment NAME [--namespace NS] [--timeout DURATION]";
  using Environment = std::map<std::string, std::string, std::less<>>;

  // argv[1] is "scale-down".
  static bool invoked(int argc, const char* const* argv);
  // The words after "scale-down"; the problem (naming the flag) when they are not usable.
  static std::variant<ScaleDownArgs, std::string> parse(const std::vector<std::string>& args);
  // Exit status: 0 no pod of the Deployment left (or no Deployment), 1 refused, failed, timed
  // out or interrupted, 2 a usage error or no cluster configuration. Progress on `out`, the one
  // failure line on `err`.
  static int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 const Environment& env);
  static std::string help();
};

}  // namespace leasehold::teardown

#pragma once
// The injector's parameters: the chart's ConfigMap <fullname>-injector (templates/injector.yaml),
// the same keys the MutatingAdmissionPolicy reads as params.data. The webhook reads them from the
// ConfigMap mounted as files (ParamsDirectory); the values are copied into the sidecar as the
// policy copies them (strings into flags), so both give the same pod.
#include <map>
#include <string>
#include <variant>

namespace leasehold::inject {

struct InjectorParams {
  std::string image;
  std::string imagePullPolicy;
  std::string leaseDuration;
  std::string renewDeadline;
  std::string retryPeriod;
  std::string httpPort;
  std::string probePort;    // as written, for --probe-address
  int probePortNumber = 0;  // the containerPort: the policy's int(params.data.probePort)
  std::string logFormat;
  std::string logLevel;
  // The sidecar's resources: "" (or a missing key) for one that is not set, which the injected
  // sidecar then does not have, as the policy's `requests`/`limits` variables leave it out.
  std::string cpuRequest;
  std::string memoryRequest;
  std::string cpuLimit;
  std::string memoryLimit;

  // Every other key present and not empty, the two ports whole numbers from 1 to 65535;
  // otherwise a message naming the key (a policy with such parameters fails to mutate and the pod
  // is admitted without the sidecar: the webhook does the same, with a warning).
  bool operator==(const InjectorParams&) const = default;

  static std::variant<InjectorParams, std::string> fromData(
      const std::map<std::string, std::string>& data);
};

}  // namespace leasehold::inject

#pragma once
// The injector's parameters ConfigMap data as the chart writes it (templates/injector.yaml) for a
// test image: one copy for the webhook's unit tests and its fuzz target.
#include <map>
#include <string>

namespace leasehold::inject::testing {

inline std::map<std::string, std::string> injectorParamsData() {
  return {{"image", "ghcr.io/leasehold/leasehold:1.0"},
          {"imagePullPolicy", "IfNotPresent"},
          {"leaseDuration", "15s"},
          {"renewDeadline", "10s"},
          {"retryPeriod", "2s"},
          {"httpPort", "4040"},
          {"probePort", "9102"},
          {"logFormat", "json"},
          {"logLevel", "info"},
          {"cpuRequest", "10m"},
          {"memoryRequest", "16Mi"},
          {"cpuLimit", ""},
          {"memoryLimit", "64Mi"}};
}

}  // namespace leasehold::inject::testing

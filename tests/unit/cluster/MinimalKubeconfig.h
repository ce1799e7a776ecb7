#pragma once
// The smallest kubeconfig that loads, for the tests that are about where a kubeconfig is found
// rather than what it says: one cluster at `server`, one context, and that context current.
#include <string>

namespace leasehold::testing_support {

inline std::string minimalKubeconfig(const std::string& server) {
  const std::string cluster = "clusters: [{name: c, cluster: {server: \"" + server + "\"}}]\n";
  return cluster + "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n";
}

}  // namespace leasehold::testing_support

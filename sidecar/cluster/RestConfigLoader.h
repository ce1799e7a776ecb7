#pragma once
// Finds out how to reach the API server, the way client-go does:
//   --kubeconfig given, or $KUBECONFIG set  -> kubeconfig
//   else KUBERNETES_SERVICE_HOST/PORT set    -> in-cluster service account
//   else                                     -> $HOME/.kube/config
#include <filesystem>
#include <map>
#include <string>

#include "cluster/Kubeconfig.h"
#include "cluster/RestConfig.h"
#include "cluster/RestConfigClocks.h"
#include "cluster/RestConfigResult.h"

namespace leasehold::cluster {

class RestConfigLoader {
 public:
  using Environment = std::map<std::string, std::string, std::less<>>;

  static constexpr const char* kServiceAccountDirectory =
      "/var/run/secrets/kubernetes.io/serviceaccount";

  // In-cluster: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6 in brackets),
  // the CA from ca.crt, a re-read token from token, the namespace from namespace (optional).
  static LoadResult<RestConfig> loadInCluster(
      const Environment& env,
      const std::filesystem::path& serviceAccountDirectory = kServiceAccountDirectory,
      const RestConfigClocks& clocks = {});

  static LoadResult<RestConfig> loadKubeconfig(const KubeconfigOptions& options,
                                               const Environment& env,
                                               const RestConfigClocks& clocks = {});

  // Picks one of the two as described at the top of this file.
  static LoadResult<RestConfig> load(
      const KubeconfigOptions& options, const Environment& env,
      const std::filesystem::path& serviceAccountDirectory = kServiceAccountDirectory,
      const RestConfigClocks& clocks = {});

  // True when either in-cluster variable is set (then both must be).
  static bool inClusterEnvironment(const Environment& env);
};

}  // namespace leasehold::cluster

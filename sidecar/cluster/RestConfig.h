#pragma once
// Everything needed to reach and authenticate to one API server, whichever way it was found
// (in-cluster service account or a kubeconfig). Produced by RestConfigLoader; consumed by the
// HTTP client. Holds secrets (token source, key PEM): never print it whole.
#include <memory>
#include <optional>
#include <string>

#include "cluster/TokenSource.h"

namespace leasehold::cluster {

struct RestConfig {
  // "https://10.0.0.1:443" or "https://[fd00::1]:443"; no trailing slash. May carry a path
  // prefix when the kubeconfig's server has one (API proxies such as Rancher's).
  std::string server;
  // PEM bundle to trust. Empty means the system trust store (kubeconfig without a CA).
  std::string caPem;
  // Only ever true when a kubeconfig says insecure-skip-tls-verify; never with a CA.
  bool insecureSkipTlsVerify = false;
  // Overrides the name used for SNI and certificate verification; empty means the server's host.
  std::string tlsServerName;
  // Static client certificate (kubeconfig client-certificate(-data) / client-key(-data)).
  std::string clientCertificatePem;
  std::string clientKeyPem;
  // Bearer tokens; null when the config has none (client certificate only, or no auth at all).
  std::shared_ptr<TokenSource> tokenSource;
  // In-cluster: the service-account namespace file. Kubeconfig: the context's namespace.
  std::optional<std::string> defaultNamespace;
  // Where this came from, for logs and messages: `in-cluster service account` or
  // `kubeconfig /home/me/.kube/config, context "kind-dev"`.
  std::string source;
};

}  // namespace leasehold::cluster

#pragma once
// How the client authenticates the server (and itself). PEM contents are held in memory; reading
// files (and re-reading them on rotation) is the caller's business.
#include <string>

namespace leasehold::net {

struct TlsOptions {
  // Trust exactly these CA certificates (one or more PEM blocks). When empty and verification is
  // on, the system default paths are loaded instead (costs about 1 MB of memory).
  std::string caPem;
  // Skip chain and hostname verification entirely (kubeconfig insecure-skip-tls-verify).
  bool insecureSkipVerify = false;
  // Overrides the name used for SNI and hostname verification (kubeconfig tls-server-name).
  // Empty means the host of the base URL.
  std::string serverName;
  // Optional client certificate (chain) and private key for mutual TLS.
  std::string clientCertPem;
  std::string clientKeyPem;
};

}  // namespace leasehold::net

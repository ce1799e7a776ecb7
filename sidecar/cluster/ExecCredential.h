#pragma once
// The answer of a client-go credential plugin (kind ExecCredential, printed on its stdout):
// a bearer token or a client certificate, optionally with an expiry.
#include <optional>
#include <string>
#include <string_view>

#include "cluster/RestConfigResult.h"
#include "time/Time.h"

namespace leasehold::cluster {

struct ExecCredential {
  static constexpr std::string_view kApiVersionV1 = "client.authentication.k8s.io/v1";
  static constexpr std::string_view kApiVersionV1Beta1 = "client.authentication.k8s.io/v1beta1";

  std::optional<std::string> token;
  std::string clientCertificatePem;  // both set or both empty
  std::string clientKeyPem;
  // status.expirationTimestamp; none means "valid until the server says 401".
  std::optional<time::WallTime> expiration;

  // Parses the plugin's stdout. The apiVersion must be the one the kubeconfig asked for, as in
  // client-go. `origin` starts every message (e.g. `exec plugin "aws"`); messages never quote
  // the token or key.
  static LoadResult<ExecCredential> parse(std::string_view json,
                                          std::string_view expectedApiVersion,
                                          const std::string& origin);

  // RFC 3339 ("2026-11-30T10:00:00Z", "...10:00:00.5+01:00"); none when malformed.
  static std::optional<time::WallTime> parseRfc3339(std::string_view text);
};

}  // namespace leasehold::cluster

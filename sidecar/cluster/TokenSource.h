#pragma once
// Where the bearer token for each API request comes from. The HTTP client calls token() before
// every request and invalidate() after a 401, so a rotated service-account token or an expired
// exec credential is picked up without restarting the sidecar.
//
// Implementations are not thread-safe: the whole daemon runs on one event loop thread.
#include <memory>
#include <optional>
#include <string>

namespace leasehold::cluster {

// A client certificate supplied at request time (exec plugins may return one instead of a
// token). A new object is created whenever the certificate changes, so callers can compare
// pointers to know when to rebuild their TLS context.
struct ClientCertificate {
  std::string certificatePem;
  std::string keyPem;
};

struct TokenResult {
  // The token to send as "Authorization: Bearer ...", or nothing when there is none to send.
  std::optional<std::string> token;
  // Set once when something went wrong that the caller should log (a failed re-read while the
  // old token is still in use, a failing exec plugin). Never contains the token itself.
  std::optional<std::string> warning;
  // Only exec plugins that answer with a certificate set this.
  std::shared_ptr<const ClientCertificate> clientCertificate;
};

class TokenSource {
 public:
  virtual ~TokenSource() = default;

  virtual TokenResult token() = 0;
  // The server rejected the last token (401): fetch a fresh one on the next token() call.
  virtual void invalidate() = 0;
  // For logs and messages, e.g. "token file /var/run/.../token"; never the token.
  virtual std::string describe() const = 0;
};

}  // namespace leasehold::cluster

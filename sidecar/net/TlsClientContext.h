#pragma once
// Turns TlsOptions into an OpenSSL client context, and prepares each connection's session
// (SNI and hostname/IP verification). Internal to net/: it pulls in Asio's SSL headers.
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "net/TlsOptions.h"

namespace leasehold::net {

class TlsClientContext {
 public:
  // The shared context for all connections made with these options, or an error message.
  // TLS 1.2 is the minimum. With a CA given only that CA is trusted (the system bundle is not
  // loaded); without one, the system default verify paths are used.
  static std::variant<std::shared_ptr<boost::asio::ssl::context>, std::string> create(
      const TlsOptions& options);

  // Configures one connection's SSL object before the handshake: SNI (not for IP literals) and
  // the name or IP that the peer certificate must carry. `urlHost` is the base URL's host,
  // overridden by options.serverName. Returns an error message on failure.
  static std::optional<std::string> prepareSession(SSL* ssl, const TlsOptions& options,
                                                   const std::string& urlHost);

  // A human-readable reason for a failed handshake (verification result when there is one).
  static std::string describeHandshakeFailure(SSL* ssl, const std::string& fallback);
};

}  // namespace leasehold::net

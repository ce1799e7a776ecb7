#pragma once
// Where the bearer token for each API request comes from. The HTTP client calls whenUsable() and
// then token() before every request, and invalidate() after a 401, so a rotated service-account
// token or an expired exec credential is picked up without restarting the sidecar.
//
// Nothing here blocks the event loop: token() answers with what the source has now. A source
// that refreshes in the background (an exec plugin, a child process) says through whenUsable()
// when a request has to wait for it, which is only when there is no usable credential at all.
//
// Implementations are not thread-safe: the whole daemon runs on one event loop thread.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "time/Time.h"

namespace boost::asio {
class io_context;
}

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

// How a wait for a usable credential ended.
struct TokenWait {
  // Set when the wait ran out before a credential came: the request should fail with this
  // message (a transient error). Names the source, never a secret.
  std::optional<std::string> problem;
  time::Duration waited{};  // on the source's clock
};

class TokenSource {
 public:
  virtual ~TokenSource() = default;

  // What to send now. Never waits.
  virtual TokenResult token() = 0;
  // Before a request: `ready` runs once token() has an answer worth sending, i.e. at once
  // (before whenUsable returns) when the source has a usable credential or nothing to wait for,
  // else on the loop when the refresh in progress ends, or with `problem` after `maxWait`.
  // Sources that never work in the background answer at once.
  virtual void whenUsable(time::Duration maxWait, std::function<void(TokenWait)> ready) {
    (void)maxWait;
    ready(TokenWait{});
  }
  // The server rejected the last token (401): fetch a fresh one on the next token() call.
  virtual void invalidate() = 0;
  // Binds the source to the event loop its caller runs on. A source that works in the
  // background uses the loop while any handle it returned is alive: drop them before the
  // io_context goes. The others return null.
  virtual std::shared_ptr<void> attach(boost::asio::io_context& io) {
    (void)io;
    return nullptr;
  }
  // For logs and messages, e.g. "token file /var/run/.../token"; never the token.
  virtual std::string describe() const = 0;
};

}  // namespace leasehold::cluster

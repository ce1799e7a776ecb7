#pragma once
// Credentials from a client-go exec plugin, cached until the expirationTimestamp the plugin gave
// or until invalidate() (a 401). Running the plugin blocks (see ExecCredentialPlugin); a failed
// run is not retried for kRetryAfterFailure so a broken plugin is not started on every request.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cluster/ExecCredentialPlugin.h"
#include "cluster/TokenSource.h"
#include "time/Time.h"

namespace leasehold::cluster {

class ExecTokenSource : public TokenSource {
 public:
  // Wall time, because the plugin's expiry is a wall-clock timestamp.
  using WallClock = std::function<time::WallTime()>;

  static constexpr time::Duration kRetryAfterFailure = std::chrono::seconds(5);

  // An empty `clock` means defaultWallClock.
  explicit ExecTokenSource(ExecCredentialPlugin plugin, WallClock clock = defaultWallClock);

  // Runs the plugin when there is no valid cached credential. When the run fails: no token and
  // a warning with the reason (the previous credential has expired or was rejected, so sending
  // it would only earn another 401).
  TokenResult token() override;
  void invalidate() override { cached_.reset(); }
  std::string describe() const override { return plugin_.describe(); }

  static time::WallTime defaultWallClock();

 private:
  ExecCredentialPlugin plugin_;
  WallClock clock_;
  std::optional<ExecCredential> cached_;
  std::shared_ptr<const ClientCertificate> certificate_;
  std::optional<time::WallTime> lastFailure_;
};

}  // namespace leasehold::cluster

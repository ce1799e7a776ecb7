#include "cluster/ExecTokenSource.h"

namespace leasehold::cluster {

ExecTokenSource::ExecTokenSource(ExecCredentialPlugin plugin, WallClock clock)
    : plugin_(std::move(plugin)), clock_(clock ? std::move(clock) : defaultWallClock) {}

time::WallTime ExecTokenSource::defaultWallClock() {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

TokenResult ExecTokenSource::token() {
  TokenResult result;
  const auto now = clock_();
  if (cached_ && cached_->expiration && now >= *cached_->expiration) cached_.reset();
  if (!cached_) {
    if (lastFailure_ && now - *lastFailure_ < kRetryAfterFailure && now >= *lastFailure_) {
      return result;  // already reported; no token to offer
    }
    auto fresh = plugin_.run();
    if (!fresh) {
      lastFailure_ = now;
      result.warning = fresh.message();
      return result;
    }
    lastFailure_.reset();
    cached_ = std::move(fresh).value();
    if (!cached_->clientCertificatePem.empty() &&
        (!certificate_ || certificate_->certificatePem != cached_->clientCertificatePem ||
         certificate_->keyPem != cached_->clientKeyPem)) {
      certificate_ = std::make_shared<const ClientCertificate>(
          ClientCertificate{cached_->clientCertificatePem, cached_->clientKeyPem});
    } else if (cached_->clientCertificatePem.empty()) {
      certificate_.reset();
    }
  }
  result.token = cached_->token;
  result.clientCertificate = certificate_;
  return result;
}

}  // namespace leasehold::cluster

#include "election/ElectionTimings.h"

#include <algorithm>
#include <cstdio>

namespace leasehold::election {

std::chrono::milliseconds ElectionTimings::requestDeadline() const {
  using namespace std::chrono;
  return std::clamp(duration_cast<milliseconds>(renewDeadline / 2), milliseconds(500),
                    milliseconds(5000));
}

std::optional<std::string> ElectionTimings::validate() const {
  if (retryPeriod <= time::Duration::zero()) {
    return "--retry-period (" + time::formatDuration(retryPeriod) + ") must be greater than 0";
  }
  const auto jittered = std::chrono::duration_cast<time::Duration>(
      std::chrono::duration<double, std::nano>(jitter * static_cast<double>(retryPeriod.count())));
  if (renewDeadline <= jittered) {
    char factor[16];
    std::snprintf(factor, sizeof factor, "%g", jitter);
    return "--renew-deadline (" + time::formatDuration(renewDeadline) + ") must be greater than " +
           factor + " x --retry-period (" + time::formatDuration(retryPeriod) +
           "), so the leader gets more than one try before it steps down";
  }
  if (leaseDuration <= renewDeadline) {
    return "--lease-duration (" + time::formatDuration(leaseDuration) +
           ") must be greater than --renew-deadline (" + time::formatDuration(renewDeadline) +
           "): the leader must stop claiming before anyone else may take over";
  }
  if (renewInterval && *renewInterval <= time::Duration::zero()) {
    return "--renew-interval (" + time::formatDuration(*renewInterval) + ") must be greater than 0";
  }
  if (renewInterval && *renewInterval + requestDeadline() + retryPeriod > renewDeadline) {
    return "--renew-interval (" + time::formatDuration(*renewInterval) +
           ") + the request timeout (" + time::formatDuration(requestDeadline()) +
           ", half of --renew-deadline within 0.5s..5s) + "
           "--retry-period (" +
           time::formatDuration(retryPeriod) +
           ") must be at most "
           "--renew-deadline (" +
           time::formatDuration(renewDeadline) +
           "): a renewal that fails must leave time for a retry before the leader steps down";
  }
  if (leaseDuration % std::chrono::seconds(1) != time::Duration::zero()) {
    return "--lease-duration (" + time::formatDuration(leaseDuration) +
           ") must be a whole number of seconds: the Lease stores leaseDurationSeconds";
  }
  return std::nullopt;
}

}  // namespace leasehold::election

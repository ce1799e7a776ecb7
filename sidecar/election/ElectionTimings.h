#pragma once
#include <optional>
#include <string>

#include "time/Time.h"

namespace leasehold::election {

// D (lease duration), R (renew deadline), P (retry period), as in client-go, and I (renew
// interval, --renew-interval): the leader renews I after its last confirmed renewal and retries
// every P after a failure. I defaults to P (client-go's behaviour); a longer I means fewer
// writes at the same D, R and claim rule (leader only while now < S + R).
struct ElectionTimings {
  time::Duration leaseDuration = std::chrono::seconds(15);
  time::Duration renewDeadline = std::chrono::seconds(10);
  time::Duration retryPeriod = std::chrono::seconds(2);
  double jitter = 1.2;  // followers that poll wait P + rand[0,1) * jitter * P
  std::optional<time::Duration> renewInterval = std::nullopt;  // nullopt: P

  time::Duration renewEvery() const { return renewInterval.value_or(retryPeriod); }
  // How long a renewal's request may take before it counts as failed: R/2 within [0.5s, 5s],
  // so that a failed renewal leaves time for retries before R.
  std::chrono::milliseconds requestDeadline() const;
  // D > R > jitter * P > 0 and D in whole seconds; with I given, I > 0 and
  // I + requestDeadline() + P <= R (a renewal that fails at I gets one retry before R);
  // otherwise a message naming the flags.
  std::optional<std::string> validate() const;
};

}  // namespace leasehold::election

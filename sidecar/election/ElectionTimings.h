#pragma once
#include <optional>
#include <string>

#include "time/Time.h"

namespace leasehold::election {

// D (lease duration), R (renew deadline), P (retry period), as in client-go.
struct ElectionTimings {
  time::Duration leaseDuration = std::chrono::seconds(15);
  time::Duration renewDeadline = std::chrono::seconds(10);
  time::Duration retryPeriod = std::chrono::seconds(2);
  double jitter = 1.2;  // followers that poll wait P + rand[0,1) * jitter * P

  // D > R > jitter * P > 0 and D in whole seconds; otherwise a message naming the flags.
  std::optional<std::string> validate() const;
};

}  // namespace leasehold::election

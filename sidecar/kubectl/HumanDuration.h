#pragma once
// Durations the way kubectl prints ages (k8s.io/apimachinery/pkg/util/duration.HumanDuration):
// "5s" up to 2 minutes, "3m20s" under 10 minutes, "42m" under 3 hours, "2h5m" under 8 hours,
// "20h", "3d4h", "30d", "2y10d", "9y"; a duration below -1s (a clock ahead of ours) is
// "<invalid>", one between -1s and 0 is "0s".
#include <chrono>
#include <string>

namespace leasehold::kubectl {

class HumanDuration {
 public:
  static std::string format(std::chrono::nanoseconds d);
};

}  // namespace leasehold::kubectl

#pragma once
// Durations as Go writes them, which is what Kubernetes users know from client-go flags:
// "500ms", "15s", "1m30s", "1.5s", "2h"; units ns, us (or µs), ms, s, m, h.
// Negative values, a missing unit (except plain "0") and values beyond ~292 years are rejected.
#include <string_view>
#include <variant>

#include "config/ConfigError.h"
#include "time/Time.h"

namespace leasehold::config {

class DurationParser {
 public:
  static std::variant<time::Duration, ConfigError> parse(std::string_view text);
};

}  // namespace leasehold::config

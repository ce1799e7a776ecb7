#pragma once
// The answer to "do I lead?", computed by Elector::leadership() at the moment it is asked.
#include <cstdint>
#include <optional>
#include <string>

#include "time/Time.h"

namespace leasehold::election {

struct Leadership {
  bool leader = false;
  std::string identity;  // this replica
  std::string holder;    // the holder last observed ("" when none or released)
  std::string holderPod;
  std::string holderAddress;
  // leaseTransitions of the term: ours when leader, else the observed holder's.
  std::optional<std::int64_t> fencingToken;
  std::optional<time::WallTime> acquireTime;
  std::optional<time::WallTime> renewTime;
  // Only when leader: the wall-clock instant at which this replica stops claiming, unless it
  // renews first (send time of the last confirmed write + renew deadline).
  std::optional<time::WallTime> validUntil;
  std::optional<time::MonoTime> validUntilMono;

  bool operator==(const Leadership&) const = default;
};

}  // namespace leasehold::election

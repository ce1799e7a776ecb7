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
  // While the store refuses this replica's requests (a missing RBAC grant, rejected
  // credentials, an invalid object): which request and why, with a hint; "" otherwise. A
  // replica that cannot read or write the lock never leads: this says why, where the app and
  // the operator look (/leader, the status file), not only in the log.
  std::string problem;

  bool operator==(const Leadership&) const = default;
};

}  // namespace leasehold::election

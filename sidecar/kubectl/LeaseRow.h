#pragma once
// One Lease as `kubectl leasehold get` shows it, computed from the object and a wall-clock
// reading (injected, so tests fix it). RENEWED and EXPIRES subtract the holder's wall clock
// (renewTime) from ours: informational, skewed by however far the clocks differ. The election
// itself never does this (it times expiry on its own monotonic clock from when it saw a change).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "election/lease/LeaseRecord.h"
#include "time/Time.h"

namespace leasehold::kubectl {

struct LeaseRow {
  std::string ns;
  std::string name;
  election::LeaseRecord lease;
  // Age of renewTime; unset without one.
  std::optional<std::chrono::microseconds> renewedAgo;
  // renewTime + leaseDurationSeconds - now; unset without either; <= 0 means expired.
  std::optional<std::chrono::microseconds> expiresIn;
  std::optional<std::chrono::microseconds> acquiredAgo;

  static LeaseRow from(std::string ns, std::string name, election::LeaseRecord lease,
                       time::WallTime now);
  bool expired() const { return expiresIn && expiresIn->count() <= 0; }
};

// Decodes a Lease (GET) or a LeaseList (LIST) body into rows (a list in its order). False, with
// a message naming the field, when the body is not one.
bool decodeLeaseRow(std::string_view json, time::WallTime now, LeaseRow& out, std::string& error);
bool decodeLeaseRows(std::string_view json, time::WallTime now, std::vector<LeaseRow>& out,
                     std::string& error);

}  // namespace leasehold::kubectl

#pragma once
// Who competes for a lock: the name a candidate writes as holder, whatever the store.
#include <compare>
#include <string>

namespace leasehold::election {

// A strong type: an identity, a holder and a resourceVersion are all strings and easy to mix up.
struct Identity {
  std::string value;
  auto operator<=>(const Identity&) const = default;
};

}  // namespace leasehold::election

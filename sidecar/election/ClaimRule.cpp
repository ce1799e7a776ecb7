#include "election/ClaimRule.h"

namespace leasehold::election {

void describeClaim(Leadership& l, std::int64_t token, time::MonoTime endsAt, time::MonoTime now,
                   const time::Clock& clock) {
  l.leader = true;
  l.fencingToken = token;
  l.validUntilMono = endsAt;
  l.validUntil =
      clock.wallNow() + std::chrono::duration_cast<std::chrono::microseconds>(endsAt - now);
}

}  // namespace leasehold::election

#pragma once
// The claim rule, the same for every store (docs/design.md section 2): a replica claims the
// lock only while now < S + R, where S is when the last write (or keep-alive) that the store
// confirmed was *sent*, read on this process's monotonic clock, and R is the renew deadline.
// The store lets anybody else in only once D has passed since it applied that write (a Lease's
// observers count D from when they saw it; etcd expires the lease D after it granted or
// renewed it), which is after S; with R < D and clocks that run at about the same rate, two
// claims never overlap. No wall clock of any machine is part of it.
#include <cstdint>

#include "election/ElectionTimings.h"
#include "election/Leadership.h"
#include "time/Clock.h"

namespace leasehold::election {

// When the claim that a confirmed write sent at `sentAt` supports ends.
inline time::MonoTime claimEndsAt(time::MonoTime sentAt, const ElectionTimings& timings) {
  return sentAt + timings.renewDeadline;
}

// The leader's side of a Leadership answer, for a claim that holds at `now`: leader, the
// term's token and until when it holds (monotonic, and as wall time for people to read).
void describeClaim(Leadership& l, std::int64_t token, time::MonoTime endsAt, time::MonoTime now,
                   const time::Clock& clock);

}  // namespace leasehold::election

#pragma once
// Proof that the process holding a lock has exited (--fast-failover, docs/design.md section
// "Fast failover"): the one exception to "others take over only at their observation + D".
// A holder that stopped renewing may be paused, partitioned or dead; only a witness that saw
// its process exit (on Kubernetes: the kubelet's terminated record of the holder's container)
// lets a follower take over before the lease expires. The takeover is still a compare-and-swap
// on the record the proof was about, with a new fencing token.
#include <functional>
#include <string>

#include "election/lease/LeaseRecord.h"

namespace leasehold::election {

class HolderExitWitness {
 public:
  virtual ~HolderExitWitness() = default;
  // Looks for proof that the process that wrote `record` (another holder's, or an earlier
  // process of this identity) has exited. exited(proof) runs on the event loop, never from
  // inside follow(), at most once per follow(), with a sentence for the log. A later follow()
  // replaces the earlier one (whose callback never runs); so does unfollow().
  virtual void follow(const LeaseRecord& record, std::function<void(std::string proof)> exited) = 0;
  virtual void unfollow() = 0;
};

}  // namespace leasehold::election

#pragma once
// The election on one Kubernetes Lease, as lock::Sidecar sees it: an election::Elector on the
// Lease's store (kube::LeaseClient with its watch in production, MemoryLeaseStore in tests),
// seen through a LastSeenLeaseStore so that the Kubernetes Events about the Lease can name it
// (its uid and resourceVersion) without a request of their own. It owns the whole chain.
#include <functional>
#include <memory>
#include <optional>

#include "election/lease/Elector.h"
#include "election/lease/HolderExitWitness.h"
#include "election/lease/LeaseStore.h"
#include "kube/LastSeenLeaseStore.h"
#include "time/Clock.h"

namespace leasehold::kube {

namespace detail {
// Built before the Elector that uses them and destroyed after it (a base class that comes
// first: the base-from-member idiom).
struct LeaseElectionStores {
  LeaseElectionStores(std::unique_ptr<election::LeaseStore> s,
                      std::unique_ptr<election::HolderExitWitness> w)
      : store(std::move(s)), lastSeen(*store), witness(std::move(w)) {}
  std::unique_ptr<election::LeaseStore> store;
  LastSeenLeaseStore lastSeen;
  std::unique_ptr<election::HolderExitWitness> witness;  // --fast-failover, else null
};
}  // namespace detail

class LeaseElection : private detail::LeaseElectionStores, public election::Elector {
 public:
  // Throws std::invalid_argument as Elector does (impossible timings, no identity).
  // witness: --fast-failover's (HolderPodWatch in production), or null.
  LeaseElection(time::Clock& clock, std::unique_ptr<election::LeaseStore> store,
                election::ElectorConfig config, std::function<double()> random01,
                std::unique_ptr<election::HolderExitWitness> witness = nullptr)
      : LeaseElectionStores(std::move(store), std::move(witness)),
        Elector(clock, lastSeen, std::move(config), std::move(random01)) {
    if (LeaseElectionStores::witness) setExitWitness(LeaseElectionStores::witness.get());
  }

  // The Lease as last read or written; nullopt before the first answer or once deleted.
  const std::optional<election::LeaseRecord>& lastSeenLease() const { return lastSeen.last(); }
};

}  // namespace leasehold::kube

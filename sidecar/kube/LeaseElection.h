#pragma once
// The election on one Kubernetes Lease, as lock::Sidecar sees it: an election::Elector on the
// Lease's store (kube::LeaseClient with its watch in production, MemoryLeaseStore in tests),
// seen through a LastSeenLeaseStore so that the Kubernetes Events about the Lease can name it
// (its uid and resourceVersion) without a request of their own. It owns the whole chain.
#include <functional>
#include <memory>
#include <optional>

#include "election/Elector.h"
#include "election/LeaseStore.h"
#include "kube/LastSeenLeaseStore.h"
#include "time/Clock.h"

namespace leasehold::kube {

namespace detail {
// Built before the Elector that uses them and destroyed after it (a base class that comes
// first: the base-from-member idiom).
struct LeaseElectionStores {
  explicit LeaseElectionStores(std::unique_ptr<election::LeaseStore> s)
      : store(std::move(s)), lastSeen(*store) {}
  std::unique_ptr<election::LeaseStore> store;
  LastSeenLeaseStore lastSeen;
};
}  // namespace detail

class LeaseElection : private detail::LeaseElectionStores, public election::Elector {
 public:
  // Throws std::invalid_argument as Elector does (impossible timings, no identity).
  LeaseElection(time::Clock& clock, std::unique_ptr<election::LeaseStore> store,
                election::ElectorConfig config, std::function<double()> random01)
      : LeaseElectionStores(std::move(store)),
        Elector(clock, lastSeen, std::move(config), std::move(random01)) {}

  // The Lease as last read or written; nullopt before the first answer or once deleted.
  const std::optional<election::LeaseRecord>& lastSeenLease() const { return lastSeen.last(); }
};

}  // namespace leasehold::kube

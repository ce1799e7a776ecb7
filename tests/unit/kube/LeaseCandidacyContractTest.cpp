// kube::LeaseElection, the Candidacy on one Kubernetes Lease, passes the Candidacy contract
// (tests/unit/support/CandidacyContract.h) on the in-memory Lease: one MemoryLeaseBackend (the
// API server), one MemoryLeaseStore per candidate (its connection).
#include <map>

#include "CandidacyContract.h"
#include "MemoryLeaseStore.h"
#include "kube/LeaseElection.h"

namespace leasehold::election::contract {
namespace kube_lease {

using namespace std::chrono_literals;

class InMemoryLease {
 public:
  explicit InMemoryLease(time::FakeClock& clock) : clock_(clock) {}

  ElectionTimings timings() const { return {5s, 3s, 1s, 1.2}; }
  std::unique_ptr<Candidacy> candidacy(const std::string& identity) {
    auto store = std::make_unique<MemoryLeaseStore>(backend_, clock_);
    stores_[identity] = store.get();
    return std::make_unique<kube::LeaseElection>(
        clock_, std::move(store), ElectorConfig{Identity{identity}, timings()}, [] { return 0.5; });
  }
  void setReachable(const std::string& identity, bool reachable) {
    stores_.at(identity)->setPartitioned(!reachable);
  }
  // A 403 on its first request (the GET): a grant missing from its Role.
  void refuseFirstRequest(const std::string& identity) {
    stores_.at(identity)->failNext(1, StoreStatus::kFatal);
  }
  // An operator's request: spec.preferredHolder on the Lease.
  bool requestHandover(const std::string& to) {
    auto record = backend_.current();
    if (!record) return false;
    record->preferredHolder = to;
    backend_.put(*record);
    return true;
  }

 private:
  time::FakeClock& clock_;
  MemoryLeaseBackend backend_;
  std::map<std::string, MemoryLeaseStore*> stores_;  // each owned by its LeaseElection
};

}  // namespace kube_lease

INSTANTIATE_TYPED_TEST_SUITE_P(KubernetesLease, CandidacyContract,
                               ::testing::Types<kube_lease::InMemoryLease>);

}  // namespace leasehold::election::contract

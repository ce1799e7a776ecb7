#pragma once
// Shared set-up for elector tests: one fake clock, one in-memory Lease, any number of electors.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "FakeClock.h"
#include "MemoryLeaseStore.h"
#include "election/lease/Elector.h"

namespace leasehold::election::testing {

// The election tests speak the time vocabulary unqualified.
using namespace leasehold::time;
using namespace std::chrono_literals;

struct Replica {
  std::unique_ptr<MemoryLeaseStore> store;
  std::unique_ptr<Elector> elector;
  std::vector<ElectorEvent> events;

  bool saw(ElectorEvent::Kind kind) const {
    for (const auto& e : events)
      if (e.kind == kind) return true;
    return false;
  }
  Leadership now() const { return elector->leadership(); }
};

class ElectorFixture : public ::testing::Test {
 protected:
  std::unique_ptr<Replica> replica(const std::string& id,
                                   FollowerMode mode = FollowerMode::kWatch) {
    auto r = std::make_unique<Replica>();
    r->store = std::make_unique<MemoryLeaseStore>(backend, clock);
    ElectorConfig config{Identity{id}, timings, mode};
    r->elector = std::make_unique<Elector>(clock, *r->store, config, [] { return 0.5; });
    auto* raw = r.get();
    r->elector->setEventHandler([raw](const ElectorEvent& e) { raw->events.push_back(e); });
    return r;
  }

  // A replica that has started and done everything due at once (usually: acquired or followed).
  std::unique_ptr<Replica> started(const std::string& id,
                                   FollowerMode mode = FollowerMode::kWatch) {
    auto r = replica(id, mode);
    r->elector->start();
    clock.runDue();
    return r;
  }

  // A lease written by somebody else, as a foreign process would leave it.
  void seed(const std::string& holder, std::int32_t transitions, std::int32_t durationSeconds = 15,
            std::optional<WallTime> renew = std::nullopt) {
    LeaseRecord r;
    r.holderIdentity = holder;
    r.leaseDurationSeconds = durationSeconds;
    r.leaseTransitions = transitions;
    r.acquireTime = renew ? *renew : clock.wallNow();
    r.renewTime = renew ? *renew : clock.wallNow();
    backend.put(r);
  }

  LeaseRecord stored() const { return *backend.current(); }

  FakeClock clock;
  MemoryLeaseBackend backend;
  ElectionTimings timings{15s, 10s, 2s, 1.2};
};

}  // namespace leasehold::election::testing

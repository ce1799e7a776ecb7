// kube::LeaseElection on the in-memory Lease: it is the Lease's Candidacy (an Elector on the
// store it owns) and remembers the Lease as the election last saw it, which the Kubernetes
// Events name: nothing before the first answer, the record this replica wrote once it leads,
// the other holder's record once it took over, the new Lease once it was deleted and created.
#include "kube/LeaseElection.h"

#include <gtest/gtest.h>

#include "FakeClock.h"
#include "MemoryLeaseStore.h"

namespace leasehold::kube {
namespace {

using namespace std::chrono_literals;

class LeaseElectionTest : public ::testing::Test {
 protected:
  std::unique_ptr<LeaseElection> make(const std::string& id) {
    return std::make_unique<LeaseElection>(
        clock_, std::make_unique<election::MemoryLeaseStore>(backend_, clock_),
        election::ElectorConfig{election::Identity{id}, timings_}, [] { return 0.5; });
  }
  static std::string holderOf(const std::optional<election::LeaseRecord>& r) {
    return r ? "holder " + r->holderIdentity : "none";
  }

  time::FakeClock clock_;
  election::MemoryLeaseBackend backend_;
  election::ElectionTimings timings_{15s, 10s, 2s, 1.2};
};

TEST_F(LeaseElectionTest, RemembersTheLeaseAsTheElectionSawIt) {
  auto a = make("a");
  election::Candidacy& candidacy = *a;
  EXPECT_EQ(holderOf(a->lastSeenLease()), "none") << "nothing read yet";

  candidacy.start();
  clock_.runDue();
  ASSERT_TRUE(candidacy.leadership().leader);
  EXPECT_EQ(holderOf(a->lastSeenLease()), "holder a");
  EXPECT_EQ(a->lastSeenLease()->resourceVersion, backend_.current()->resourceVersion);

  election::LeaseRecord taken = *backend_.current();  // an operator hands it to b
  taken.holderIdentity = "b";
  backend_.put(taken);
  clock_.runDue();
  EXPECT_FALSE(candidacy.leadership().leader);
  EXPECT_EQ(holderOf(a->lastSeenLease()), "holder b") << "the watch's record";

  backend_.remove();  // deleted: a creates it again at once, and that is what it remembers
  clock_.runDue();
  EXPECT_TRUE(candidacy.leadership().leader);
  EXPECT_EQ(holderOf(a->lastSeenLease()), "holder a");
  EXPECT_EQ(a->lastSeenLease()->resourceVersion, backend_.current()->resourceVersion);
}

// The chain's order: the Elector stops watching before the stores it uses are gone (a watch
// left behind would call into freed memory: ASan's part).
TEST_F(LeaseElectionTest, DestroyedWhileWatchingLeavesNoObserverBehind) {
  auto a = make("a");
  a->start();
  clock_.runDue();
  a.reset();
  election::LeaseRecord changed = *backend_.current();
  changed.holderIdentity = "b";
  backend_.put(changed);
  clock_.runDue();
  SUCCEED();
}

}  // namespace
}  // namespace leasehold::kube

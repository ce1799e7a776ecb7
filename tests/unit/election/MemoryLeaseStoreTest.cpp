#include "MemoryLeaseStore.h"

#include <gtest/gtest.h>

#include "FakeClock.h"

namespace leasehold::election {
namespace {

// The tests speak the time vocabulary unqualified.
using namespace leasehold::time;
using namespace std::chrono_literals;

class MemoryLeaseStoreTest : public ::testing::Test {
 protected:
  StoreResult call(std::function<void(StoreCallback)> op) {
    std::optional<StoreResult> out;
    op([&](StoreResult r) { out = std::move(r); });
    EXPECT_FALSE(out) << "answers must never arrive from inside the call";
    clock.advance(1s);
    EXPECT_TRUE(out);
    return out ? *out : StoreResult{};
  }
  LeaseRecord record(const std::string& holder) {
    LeaseRecord r;
    r.holderIdentity = holder;
    r.leaseDurationSeconds = 15;
    r.renewTime = clock.wallNow();
    return r;
  }
  FakeClock clock;
  MemoryLeaseBackend backend;
  MemoryLeaseStore store{backend, clock};
};

TEST_F(MemoryLeaseStoreTest, CompareAndSwapOnResourceVersion) {
  EXPECT_EQ(call([&](auto cb) { store.get(cb); }).status, StoreStatus::kNotFound);
  auto created = call([&](auto cb) { store.create(record("a"), cb); });
  ASSERT_EQ(created.status, StoreStatus::kOk);
  EXPECT_EQ(call([&](auto cb) { store.create(record("b"), cb); }).status,
            StoreStatus::kAlreadyExists);
  auto next = *created.record;
  next.holderIdentity = "b";
  auto updated = call([&](auto cb) { store.update(next, cb); });
  ASSERT_EQ(updated.status, StoreStatus::kOk);
  EXPECT_NE(updated.record->resourceVersion, created.record->resourceVersion);
  // Stale resourceVersion: conflict.
  EXPECT_EQ(call([&](auto cb) { store.update(next, cb); }).status, StoreStatus::kConflict);
  // No-op write: same resourceVersion.
  auto same = call([&](auto cb) { store.update(*updated.record, cb); });
  EXPECT_EQ(same.record->resourceVersion, updated.record->resourceVersion);
  EXPECT_EQ(backend.history().size(), 2u);
}

TEST_F(MemoryLeaseStoreTest, FaultHooks) {
  store.failNext(2, StoreStatus::kTransient, 3s);
  auto r = call([&](auto cb) { store.get(cb); });
  EXPECT_EQ(r.status, StoreStatus::kTransient);
  EXPECT_EQ(r.retryAfter, Duration(3s));
  EXPECT_EQ(call([&](auto cb) { store.create(record("a"), cb); }).status, StoreStatus::kTransient);
  EXPECT_FALSE(backend.current()) << "a failed request is not applied";

  store.loseNextResponses(1);
  EXPECT_EQ(call([&](auto cb) { store.create(record("a"), cb); }).status, StoreStatus::kTransient);
  EXPECT_TRUE(backend.current()) << "a lost answer's write is applied";

  store.setLatency(300ms);
  std::optional<StoreResult> out;
  store.get([&](StoreResult x) { out = x; });
  clock.advance(599ms);
  EXPECT_FALSE(out);
  clock.advance(1ms);
  EXPECT_TRUE(out);
}

struct RecordingObserver : LeaseObserver {
  void onLeaseObserved(const std::optional<LeaseRecord>& r) override { seen.push_back(r); }
  void onWatchStateChanged(bool h) override { health.push_back(h); }
  std::vector<std::optional<LeaseRecord>> seen;
  std::vector<bool> health;
};

TEST_F(MemoryLeaseStoreTest, NotificationsInOrderAndWatchHealth) {
  RecordingObserver o;
  store.watch(&o);
  clock.runDue();
  ASSERT_EQ(o.health, std::vector<bool>{true});
  backend.put(record("a"));
  backend.put(record("b"));
  backend.remove();
  clock.runDue();
  ASSERT_EQ(o.seen.size(), 3u);
  EXPECT_EQ(o.seen[0]->holderIdentity, "a");
  EXPECT_EQ(o.seen[1]->holderIdentity, "b");
  EXPECT_FALSE(o.seen[2]);
  store.setPartitioned(true);
  backend.put(record("c"));
  clock.runDue();
  EXPECT_EQ(o.seen.size(), 3u);
  store.setPartitioned(false);
  clock.runDue();
  EXPECT_EQ(o.health, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(o.seen.back()->holderIdentity, "c") << "a restored watch re-lists";
}

}  // namespace
}  // namespace leasehold::election

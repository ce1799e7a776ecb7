// LastSeenLeaseStore in front of a LeaseClient on FakeApiClient: it remembers the record last
// answered or watched (what the EventRecorder names in involvedObject), forgets it on 404 and on
// deletion, keeps it through failures, and passes everything on unchanged.
#include "kube/LastSeenLeaseStore.h"

#include <gtest/gtest.h>

#include "LeaseStoreFixture.h"
#include "kube/LeaseClient.h"

namespace leasehold::testing_support {
namespace {

using election::StoreResult;
using election::StoreStatus;
using ::testing::ElementsAre;

class ForwardingObserver : public election::LeaseObserver {
 public:
  void onLeaseObserved(const std::optional<election::LeaseRecord>& r) override {
    log.push_back(r ? "lease " + r->resourceVersion.value : "deleted");
  }
  void onWatchStateChanged(bool healthy) override {
    log.push_back(healthy ? "healthy" : "unhealthy");
  }
  std::vector<std::string> log;
};

class LastSeenLeaseStoreTest : public LeaseStoreFixture {
 protected:
  LastSeenLeaseStoreTest()
      : client(api, clock, kube::LeaseTarget{kLeaseName, kNs, "", ""}, {}, [] { return 0.0; }),
        store(std::make_unique<kube::LastSeenLeaseStore>(client)) {}

  std::string lastRv() const {
    return store->last() ? store->last()->resourceVersion.value : "none";
  }
  // The store watching for `observer`: the LIST found resourceVersion 10 held by "a", and the
  // watch stream is asked for (the test opens it).
  std::shared_ptr<FakeApiClient::Stream> watching(election::LeaseObserver& observer) {
    api.expect("GET", kLeaseListPath).respond(200, leaseListBody("12", "a", "10"));
    auto s = api.expect("GET", kCollection).query(::testing::HasSubstr("watch=true")).stream();
    store->watch(&observer);
    clock.runDue();
    return s;
  }

  kube::LeaseClient client;
  std::unique_ptr<kube::LastSeenLeaseStore> store;
};

// One answer after another, and what the store remembers after each.
struct Step {
  const char* op;
  int code;
  std::string body;
  StoreStatus want;
  const char* wantLast;  // resourceVersion remembered, or "none"
};

struct LastSeenCase {
  const char* name;
  std::vector<Step> steps;
};

void PrintTo(const LastSeenCase& c, std::ostream* os) {
  *os << c.name;
}

class LastSeenTableTest : public LastSeenLeaseStoreTest,
                          public ::testing::WithParamInterface<LastSeenCase> {};

TEST_P(LastSeenTableTest, RemembersTheLastRecordAnswered) {
  for (const Step& step : GetParam().steps) {
    SCOPED_TRACE(std::string(step.op) + " " + std::to_string(step.code));
    const std::string op = step.op;
    api.expect(methodOf(op), pathOf(op)).respond(step.code, step.body);
    EXPECT_EQ(run(*store, op, decoded(leaseBody("a", "1"))).status, step.want);
    EXPECT_EQ(lastRv(), step.wantLast);
  }
}

const std::string kNotFound = statusBody(404, "NotFound", "leases \"l\" not found");
const std::string kShortConflict = statusBody(409, "Conflict", "the object has been modified");

INSTANTIATE_TEST_SUITE_P(
    Table, LastSeenTableTest,
    ::testing::Values(LastSeenCase{"nothing_before_the_first_answer",
                                   {{"get", 500, "failed", StoreStatus::kTransient, "none"}}},
                      LastSeenCase{"get_create_update_each_remember",
                                   {{"get", 200, leaseBody("a", "5"), StoreStatus::kOk, "5"},
                                    {"update", 200, leaseBody("a", "6"), StoreStatus::kOk, "6"},
                                    {"get", 404, kNotFound, StoreStatus::kNotFound, "none"},
                                    {"create", 201, leaseBody("a", "9"), StoreStatus::kOk, "9"}}},
                      // A failed write tells nothing new about the Lease: keep what was seen.
                      LastSeenCase{"failures_keep_the_last_record",
                                   {{"get", 200, leaseBody("a", "5"), StoreStatus::kOk, "5"},
                                    {"update", 409, kShortConflict, StoreStatus::kConflict, "5"},
                                    {"update", 503, "unavailable", StoreStatus::kTransient, "5"},
                                    {"update", 200, "{", StoreStatus::kTransient, "5"},
                                    {"update", 403, "forbidden", StoreStatus::kFatal, "5"},
                                    {"create", 409, statusBody(409, "AlreadyExists", "exists"),
                                     StoreStatus::kAlreadyExists, "5"}}},
                      LastSeenCase{"a_404_on_update_forgets",
                                   {{"get", 200, leaseBody("a", "5"), StoreStatus::kOk, "5"},
                                    {"update", 404, kNotFound, StoreStatus::kNotFound, "none"}}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(LastSeenLeaseStoreTest, WatchNotificationsAreRememberedAndPassedOn) {
  ForwardingObserver observer;
  auto s = watching(observer);
  EXPECT_EQ(lastRv(), "10");
  s->open();
  s->send(watchEvent("MODIFIED", "b", "13"));
  EXPECT_EQ(lastRv(), "13");
  EXPECT_EQ(store->last()->holderIdentity, "b");
  s->send(watchEvent("DELETED", "b", "14"));
  EXPECT_EQ(lastRv(), "none");
  EXPECT_THAT(observer.log, ElementsAre("lease 10", "healthy", "lease 13", "deleted"));
}

TEST_F(LastSeenLeaseStoreTest, GoingAwayStopsTheWatch) {
  ForwardingObserver observer;
  auto s = watching(observer);
  s->open();
  store.reset();
  EXPECT_TRUE(s->cancelled());
}

}  // namespace
}  // namespace leasehold::testing_support

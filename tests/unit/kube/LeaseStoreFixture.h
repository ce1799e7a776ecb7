#pragma once
// What the tests of the election::LeaseStore implementations on the API share (LeaseClient, and
// LastSeenLeaseStore in front of one): the fake API on a fake clock, the request each operation
// makes, and running one operation to its answer.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "FakeApiClient.h"
#include "FakeClock.h"
#include "LeaseJson.h"
#include "election/lease/LeaseStore.h"
#include "kube/LeaseCodec.h"

namespace leasehold::testing_support {

class LeaseStoreFixture : public ::testing::Test {
 protected:
  // The request an operation (get, create, update) makes: GET or PUT the Lease, POST to the
  // collection.
  static std::string methodOf(const std::string& op) {
    return op == "get" ? "GET" : op == "create" ? "POST" : "PUT";
  }
  static std::string pathOf(const std::string& op) {
    return op == "create" ? kCollection : kObject;
  }

  // The record decoded from `body`, which must be a Lease.
  static election::LeaseRecord decoded(const std::string& body) {
    election::LeaseRecord r;
    std::string error;
    EXPECT_TRUE(kube::decodeLease(body, r, error)) << error;
    return r;
  }

  // Runs one operation on `store` and delivers its answer; the result must not arrive from
  // inside the call.
  election::StoreResult run(election::LeaseStore& store, const std::string& op,
                            const election::LeaseRecord& record) {
    std::optional<election::StoreResult> got;
    auto done = [&](election::StoreResult r) { got = std::move(r); };
    if (op == "get") store.get(done);
    if (op == "create") store.create(record, done);
    if (op == "update") store.update(record, done);
    EXPECT_FALSE(got) << "answered from inside the call";
    clock.runDue();
    EXPECT_TRUE(got) << "no answer";
    return got.value_or(election::StoreResult::error(election::StoreStatus::kFatal, "no answer"));
  }

  time::FakeClock clock;
  FakeApiClient api{clock};
};

}  // namespace leasehold::testing_support

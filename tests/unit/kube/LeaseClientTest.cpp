// LeaseClient on FakeApiClient: the requests it makes (GET, POST to the collection, PUT with the
// resourceVersion as the compare-and-swap condition, starting from the object last read) and
// how every answer maps onto the election's outcomes.
#include "kube/LeaseClient.h"

#include <gtest/gtest.h>

#include "LeaseStoreFixture.h"

namespace leasehold::testing_support {
namespace {

using election::StoreResult;
using election::StoreStatus;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Truly;
using json = nlohmann::json;

class LeaseClientTest : public LeaseStoreFixture {
 protected:
  LeaseClientTest() {
    options.requestDeadline = std::chrono::milliseconds(2500);
    client = std::make_unique<kube::LeaseClient>(
        api, clock, kube::LeaseTarget{kLeaseName, kNs, "web-1", "10.0.0.9"}, options,
        [] { return 0.0; });
  }

  StoreResult run(const std::string& op, const election::LeaseRecord& record) {
    return LeaseStoreFixture::run(*client, op, record);
  }

  kube::LeaseClientOptions options;
  std::unique_ptr<kube::LeaseClient> client;
};

struct AnswerCase {
  const char* name;
  const char* op;  // get, create, update
  int code;        // 0: no answer
  std::string body;
  std::optional<std::chrono::seconds> retryAfter;
  StoreStatus want;
  const char* messageHas;
};

// A function, not braces, so that clang-format keeps each case of the table on a line or two.
AnswerCase answer(const char* name, const char* op, int code, std::string body, StoreStatus want,
                  const char* messageHas, std::optional<std::chrono::seconds> retryAfter = {}) {
  return {name, op, code, std::move(body), retryAfter, want, messageHas};
}

void PrintTo(const AnswerCase& c, std::ostream* os) {
  *os << c.name;
}

class LeaseClientAnswerTest : public LeaseClientTest,
                              public ::testing::WithParamInterface<AnswerCase> {};

TEST_P(LeaseClientAnswerTest, MapsTheAnswerOntoTheElectionsOutcome) {
  const AnswerCase& c = GetParam();
  const std::string op = c.op;
  auto& e = api.expect(methodOf(op), pathOf(op)).verb(op);
  if (c.code == 0) {
    e.noAnswer(c.body);
  } else {
    e.respond(c.code, c.body, c.retryAfter);
  }
  const StoreResult r = run(op, decoded(leaseBody("a", "7")));
  EXPECT_EQ(election::toString(r.status), std::string(election::toString(c.want)));
  // The HTTP code goes with failures (for the election's log); success carries the record.
  if (c.code < 200 || c.code >= 300) {
    EXPECT_EQ(r.httpCode, c.code);
  }
  if (c.want == StoreStatus::kOk) {
    EXPECT_EQ(r.record->holderIdentity, "a");
  }
  EXPECT_THAT(r.message, HasSubstr(c.messageHas));
  if (c.retryAfter) {
    EXPECT_EQ(r.retryAfter, time::Duration(*c.retryAfter));
  } else {
    EXPECT_FALSE(r.retryAfter);
  }
  EXPECT_EQ(r.record.has_value(), c.want == StoreStatus::kOk);
}

const std::string kConflict =
    statusBody(409, "Conflict",
               "Operation cannot be fulfilled on leases.coordination.k8s.io \"l\": the object "
               "has been modified; please apply your changes to the latest version and try again");
const std::string kExists = statusBody(409, "AlreadyExists", "leases \"l\" already exists");

INSTANTIATE_TEST_SUITE_P(
    Table, LeaseClientAnswerTest,
    ::testing::Values(
        answer("get_200", "get", 200, leaseBody("a", "8"), StoreStatus::kOk, ""),
        answer("get_404", "get", 404, statusBody(404, "NotFound", "leases \"l\" not found"),
               StoreStatus::kNotFound, "404 NotFound: leases \"l\" not found"),
        answer("create_201", "create", 201, leaseBody("a", "1"), StoreStatus::kOk, ""),
        answer("create_409_exists", "create", 409, kExists, StoreStatus::kAlreadyExists,
               "409 AlreadyExists"),
        // A 409 on create is AlreadyExists whatever the body says.
        answer("create_409_plain", "create", 409, "conflict", StoreStatus::kAlreadyExists,
               "409: conflict"),
        answer("update_200", "update", 200, leaseBody("a", "8"), StoreStatus::kOk, ""),
        answer("update_409_conflict", "update", 409, kConflict, StoreStatus::kConflict,
               "the object has been modified"),
        answer("update_409_exists", "update", 409, kExists, StoreStatus::kAlreadyExists,
               "AlreadyExists"),
        answer("update_404", "update", 404, statusBody(404, "NotFound", "gone"),
               StoreStatus::kNotFound, "gone"),
        answer("update_no_answer", "update", 0, "timed out after 2.5s", StoreStatus::kTransient,
               "no answer: timed out after 2.5s"),
        answer("update_429_retry_after", "update", 429, "Too many requests, please try again",
               StoreStatus::kTransient, "429: Too many requests", std::chrono::seconds(3)),
        answer("update_500", "update", 500, statusBody(500, "InternalError", "etcd"),
               StoreStatus::kTransient, "500 InternalError: etcd"),
        answer("get_503", "get", 503, "unavailable", StoreStatus::kTransient, "503"),
        answer("get_401", "get", 401, statusBody(401, "Unauthorized", "Unauthorized"),
               StoreStatus::kFatal, "401 Unauthorized"),
        answer("update_403", "update", 403,
               statusBody(403, "Forbidden", "cannot update resource \"leases\""),
               StoreStatus::kFatal, "403 Forbidden"),
        // A refusal says what to fix (kube::refusalHint), for /leader's "problem" and the log.
        answer("get_403_names_the_grant", "get", 403,
               statusBody(403, "Forbidden", "cannot get resource \"leases\""), StoreStatus::kFatal,
               "(this ServiceAccount may not get the Lease: the Role's"),
        answer("create_403_names_the_missing_lease", "create", 403,
               statusBody(403, "Forbidden", "cannot create resource \"leases\""),
               StoreStatus::kFatal, "(the Lease does not exist and this ServiceAccount may not"),
        answer("get_401_says_the_credentials", "get", 401,
               statusBody(401, "Unauthorized", "Unauthorized"), StoreStatus::kFatal,
               "401 Unauthorized: Unauthorized (the credentials were not accepted)"),
        answer("update_422", "update", 422, statusBody(422, "Invalid", "spec: Invalid"),
               StoreStatus::kFatal, "422 Invalid"),
        answer("get_400", "get", 400, "bad", StoreStatus::kFatal, "400"),
        // A 2xx whose body is not a Lease: the write may well have been applied, so the election
        // must treat it like a lost answer, not as success or a fatal error.
        answer("get_200_not_json", "get", 200, "{", StoreStatus::kTransient,
               "200 with a malformed body"),
        answer("update_200_bad_field", "update", 200,
               R"({"kind":"Lease","metadata":{"resourceVersion":"8"},)"
               R"("spec":{"leaseTransitions":"x"}})",
               StoreStatus::kTransient, "leaseTransitions"),
        answer("create_201_empty", "create", 201, "", StoreStatus::kTransient,
               "201 with a malformed body")),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(LeaseClientTest, GetDecodesTheLeaseAndUsesTheRequestDeadline) {
  api.expect("GET", kObject).respond(200, leaseBody("web-0_1", "8", 3));
  const StoreResult r = run("get", {});
  ASSERT_EQ(r.status, StoreStatus::kOk);
  EXPECT_EQ(r.record->holderIdentity, "web-0_1");
  EXPECT_EQ(r.record->leaseTransitions, 3);
  EXPECT_EQ(r.record->resourceVersion.value, "8");
  ASSERT_EQ(api.requests().size(), 1u);
  EXPECT_EQ(api.requests()[0].deadline, std::chrono::milliseconds(2500));
}

TEST_F(LeaseClientTest, UpdateIsACompareAndSwapThatKeepsUnknownFields) {
  election::LeaseRecord read = decoded(leaseBody("web-0_1", "7", 3));
  read.holderIdentity = "web-1_2";
  read.leaseTransitions = 4;
  api.expect("PUT", kObject)
      .contentType(::testing::Eq("application/json"))
      .body(Truly([](const std::string& text) {
        const json b = json::parse(text);
        return b["metadata"]["resourceVersion"] == "7" && b["metadata"]["uid"] == "uid-1" &&
               b["metadata"]["labels"]["team"] == "x" &&
               b["metadata"]["annotations"]["other"] == "keep" &&
               b["metadata"]["annotations"]["leasehold.io/holder-pod"] == "web-1" &&
               b["metadata"]["annotations"]["leasehold.io/holder-address"] == "10.0.0.9" &&
               b["spec"]["futureField"] == true && b["spec"]["holderIdentity"] == "web-1_2" &&
               b["spec"]["leaseTransitions"] == 4;
      }))
      .respond(200, leaseBody("web-1_2", "9", 4));
  const StoreResult r = run("update", read);
  ASSERT_EQ(r.status, StoreStatus::kOk);
  EXPECT_EQ(r.record->resourceVersion.value, "9");
  // The next write starts from what the server answered, not from what was sent.
  EXPECT_THAT(r.record->opaque, HasSubstr("\"resourceVersion\":\"9\""));
}

TEST_F(LeaseClientTest, AConflictLeavesTheWriteToTheElection) {
  // Two writers start from resourceVersion 7; the server takes one, refuses the other.
  election::LeaseRecord read = decoded(leaseBody("web-0_1", "7"));
  api.expect("PUT", kObject).body(HasSubstr("\"holderIdentity\":\"me\"")).respond(409, kConflict);
  read.holderIdentity = "me";
  EXPECT_EQ(run("update", read).status, StoreStatus::kConflict);
  EXPECT_EQ(api.unmet(), 0u);
}

TEST_F(LeaseClientTest, NotFoundThenCreateSendsNoResourceVersion) {
  api.expect("GET", kObject).respond(404, statusBody(404, "NotFound", "leases \"l\" not found"));
  EXPECT_EQ(run("get", {}).status, StoreStatus::kNotFound);

  election::LeaseRecord fresh;
  fresh.holderIdentity = "web-1_2";
  fresh.leaseDurationSeconds = 15;
  api.expect("POST", kCollection)
      .verb("create")
      .body(Truly([](const std::string& text) {
        const json b = json::parse(text);
        return !b["metadata"].contains("resourceVersion") && b["metadata"]["name"] == "l" &&
               b["metadata"]["namespace"] == "ns" && b["kind"] == "Lease" &&
               b["spec"]["holderIdentity"] == "web-1_2";
      }))
      .respond(201, leaseBody("web-1_2", "1"));
  const StoreResult r = run("create", fresh);
  ASSERT_EQ(r.status, StoreStatus::kOk);
  EXPECT_EQ(r.record->resourceVersion.value, "1");
}

TEST_F(LeaseClientTest, AnAnswerAfterTheClientIsGoneIsDropped) {
  auto held = api.expect("GET", kObject).hold();
  bool called = false;
  client->get([&](StoreResult) { called = true; });
  ASSERT_TRUE(held->made());
  client.reset();
  held->reply(200, leaseBody("a", "1"));
  EXPECT_FALSE(called);
}

TEST_F(LeaseClientTest, PathsNameTheNamespaceAndLease) {
  EXPECT_EQ(client->collectionPath(), kCollection);
  EXPECT_EQ(client->objectPath(), kObject);
  EXPECT_THAT(client->objectPath(), Not(HasSubstr("?")));
}

}  // namespace
}  // namespace leasehold::testing_support

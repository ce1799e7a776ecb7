// LeaseCandidate on FakeApiClient and FakeClock: created on start, renewed when pinged and every
// 5 minutes, re-read on conflicts, published again when it disappears, deleted on stop; every
// request the fake does not expect fails the test. About 400 lines: the one class's tables
// (start, ping, stop, same-second ties) share the fixture and the JSON helpers above them.
#include "kube/LeaseCandidate.h"

#include <gtest/gtest.h>

#include <array>
#include <functional>

#include "FakeApiClient.h"

namespace leasehold::testing_support {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kCandidateCollection =
    "/apis/coordination.k8s.io/v1beta1/namespaces/ns/leasecandidates";
const std::string kCandidateObject = kCandidateCollection + "/web-0-1a2b3c4d";
const std::string kOldTime = "2026-12-01T10:00:00.000000Z";
const std::string kLaterTime = "2026-12-01T10:00:05.000000Z";

std::string candidate(const std::string& rv, const std::string& renewTime,
                      const std::string& pingTime = "") {
  std::string s = R"({"apiVersion":"coordination.k8s.io/v1beta1","kind":"LeaseCandidate",)"
                  R"("metadata":{"name":"web-0-1a2b3c4d","namespace":"ns","resourceVersion":")" +
                  rv +
                  R"("},"spec":{"leaseName":"my-app","binaryVersion":"0.9.0",)"
                  R"("emulationVersion":"0.9.0","strategy":"OldestEmulationVersion",)"
                  R"("renewTime":")" +
                  renewTime + "\"";
  if (!pingTime.empty()) s += R"(,"pingTime":")" + pingTime + "\"";
  return s + "}}";
}

std::string event(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}";
}

::testing::Matcher<const std::string&> watchQuery(const std::string& rv) {
  return AllOf(HasSubstr("watch=true"), HasSubstr("fieldSelector=metadata.name%3Dweb-0-1a2b3c4d"),
               HasSubstr("resourceVersion=" + rv + "&"));
}

class LeaseCandidateTest : public ::testing::Test {
 public:
  // Tie checks off (maxTieMoves 0) unless a test asks: they add LISTs after every create.
  explicit LeaseCandidateTest(int maxTieMoves = 0) {
    kube::LeaseCandidateOptions options;
    options.maxTieMoves = maxTieMoves;
    lc = std::make_unique<kube::LeaseCandidate>(
        api, clock,
        kube::LeaseCandidateSpec{"ns", "web-0-1a2b3c4d", "my-app", "0.9.0", "",
                                 "OldestEmulationVersion"},
        [] { return 0.0; }, options);
    lc->setProblemHandler([this](const std::string& p) { problems.push_back(p); });
    lc->setWrittenHandler([this](bool ping) { writes.push_back(ping); });
  }
  ~LeaseCandidateTest() override { lc.reset(); }

  FakeApiClient::Expectation& expectCreate() {
    return api.expect("POST", kCandidateCollection)
        .body(AllOf(HasSubstr(R"("leaseName":"my-app")"), HasSubstr(R"("binaryVersion":"0.9.0")"),
                    HasSubstr(R"("emulationVersion":"0.9.0")"),
                    HasSubstr(R"("strategy":"OldestEmulationVersion")"),
                    HasSubstr(R"("name":"web-0-1a2b3c4d")"), HasSubstr(R"("renewTime":")")));
  }
  FakeApiClient::Expectation& expectRenew(const std::string& rv) {
    return api.expect("PUT", kCandidateObject)
        .body(HasSubstr(R"("resourceVersion":")" + rv + "\""));
  }
  // Started and published (rv 1), its watch open.
  std::shared_ptr<FakeApiClient::Stream> published() {
    expectCreate().respond(201, candidate("1", kOldTime));
    auto w = api.expect("GET", kCandidateCollection).query(watchQuery("1")).stream();
    lc->start();
    clock.runDue();
    EXPECT_TRUE(w->opened());
    if (w->opened()) w->open();
    return w;
  }

  time::FakeClock clock;
  FakeApiClient api{clock};
  std::vector<std::string> problems;
  std::vector<bool> writes;
  std::unique_ptr<kube::LeaseCandidate> lc;
};

// What start() does with each answer to its create.
struct StartCase {
  const char* name;
  std::function<void(LeaseCandidateTest&)> script;  // expectations after the POST
  int createAnswer;
  time::Duration wait;
  const char* problem;  // expected in the log, "" for none
};

void PrintTo(const StartCase& c, std::ostream* os) {
  *os << c.name;
}

const StartCase kStartCases[] = {
    {"CreatedThenWatched",
     [](auto& t) { t.api.expect("GET", kCandidateCollection).query(watchQuery("1")).stream(); },
     201, 0s, ""},
    {"AlreadyThereIsReadAndRenewed",
     [](auto& t) {
       t.api.expect("GET", kCandidateObject).respond(200, candidate("4", kOldTime));
       t.expectRenew("4").respond(200, candidate("5", kLaterTime));
       t.api.expect("GET", kCandidateCollection).query(watchQuery("5")).stream();
     },
     409, 0s, ""},
    {"NotServedSaysWhyAndRetries",
     [](auto& t) {
       t.expectCreate().respond(201, candidate("1", kOldTime));
       t.api.expect("GET", kCandidateCollection).query(watchQuery("1")).stream();
     },
     404, 600ms, "CoordinatedLeaderElection feature gate"},
    {"ServerErrorIsRetriedWithBackoff",
     [](auto& t) {
       t.expectCreate().respond(201, candidate("1", kOldTime));
       t.api.expect("GET", kCandidateCollection).query(watchQuery("1")).stream();
     },
     500, 600ms, "500"},
    {"ForbiddenIsRetriedWithBackoff",
     [](auto& t) {
       t.expectCreate().respond(201, candidate("1", kOldTime));
       t.api.expect("GET", kCandidateCollection).query(watchQuery("1")).stream();
     },
     403, 600ms, "403"},
};

class LeaseCandidateStart : public LeaseCandidateTest,
                            public ::testing::WithParamInterface<StartCase> {};

TEST_P(LeaseCandidateStart, Case) {
  const StartCase& c = GetParam();
  expectCreate().respond(c.createAnswer, c.createAnswer == 201 ? candidate("1", kOldTime) : "");
  c.script(*this);
  lc->start();
  clock.runDue();
  if (c.wait > 0s) {
    clock.advance(400ms);  // the backoff (500 ms) has not passed: nothing more yet
    EXPECT_EQ(api.requests().size(), 1u);
    clock.advance(c.wait - 400ms);
  }
  EXPECT_EQ(api.unmet(), 0u);
  if (*c.problem) {
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_THAT(problems[0], HasSubstr(c.problem));
  } else {
    EXPECT_TRUE(problems.empty());
  }
  EXPECT_EQ(api.requests().at(0).deadline, 5000ms);
}

INSTANTIATE_TEST_SUITE_P(LeaseCandidate, LeaseCandidateStart, ::testing::ValuesIn(kStartCases),
                         [](const auto& info) { return std::string(info.param.name); });

// What a change of the candidate seen through the watch leads to.
struct PingCase {
  const char* name;
  std::string object;
  bool renews;
};

void PrintTo(const PingCase& c, std::ostream* os) {
  *os << c.name;
}

const PingCase kPingCases[] = {
    {"PingLaterThanRenewRenews", candidate("2", kOldTime, kLaterTime), true},
    {"PingEarlierThanRenewIsAnswered", candidate("2", kLaterTime, kOldTime), false},
    {"PingEqualToRenewIsAnswered", candidate("2", kOldTime, kOldTime), false},
    {"NoPingNothing", candidate("2", kLaterTime), false},
};

class LeaseCandidatePing : public LeaseCandidateTest,
                           public ::testing::WithParamInterface<PingCase> {};

TEST_P(LeaseCandidatePing, Case) {
  const PingCase& c = GetParam();
  auto w = published();
  if (c.renews) expectRenew("2").respond(200, candidate("3", kLaterTime, kLaterTime));
  w->send(event("MODIFIED", c.object));
  clock.runDue();
  EXPECT_EQ(api.unmet(), 0u);
  EXPECT_EQ(api.requests().size(), c.renews ? 3u : 2u);
  if (c.renews) {
    ASSERT_EQ(writes.size(), 2u);
    EXPECT_TRUE(writes[1]);  // the renewal answered a ping
  }
  EXPECT_TRUE(w->active());  // the watch goes on
}

INSTANTIATE_TEST_SUITE_P(LeaseCandidate, LeaseCandidatePing, ::testing::ValuesIn(kPingCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(LeaseCandidateTest, RenewsEveryFiveMinutesWithoutAPing) {
  auto w = published();
  clock.advance(299s);
  EXPECT_EQ(api.requests().size(), 2u);
  expectRenew("1").respond(200, candidate("2", kLaterTime));
  clock.advance(1s);
  EXPECT_EQ(api.unmet(), 0u);
  expectRenew("2").respond(200, candidate("3", kLaterTime));
  clock.advance(300s);
  EXPECT_EQ(api.unmet(), 0u);
  EXPECT_EQ(writes, (std::vector<bool>{false, false, false}));
}

TEST_F(LeaseCandidateTest, AConflictingRenewalIsReadAgainAndRetried) {
  auto w = published();
  expectRenew("2").respond(409, statusBody(409, "Conflict", "the object has been modified"));
  api.expect("GET", kCandidateObject).respond(200, candidate("3", kOldTime, kLaterTime));
  expectRenew("3").respond(200, candidate("4", kLaterTime, kLaterTime));
  w->send(event("MODIFIED", candidate("2", kOldTime, kLaterTime)));
  clock.runDue();
  EXPECT_EQ(api.unmet(), 0u);
}

TEST_F(LeaseCandidateTest, ADeletedCandidateIsPublishedAgain) {
  auto w = published();
  expectCreate().body(Not(HasSubstr("resourceVersion"))).respond(201, candidate("7", kLaterTime));
  w->send(event("DELETED", candidate("6", kOldTime)));
  clock.runDue();
  EXPECT_EQ(api.unmet(), 0u);
}

TEST_F(LeaseCandidateTest, ARenewalOfAVanishedCandidateCreatesItAgain) {
  auto w = published();
  expectRenew("1").respond(404, statusBody(404, "NotFound", "not found"));
  expectCreate().respond(201, candidate("9", kLaterTime));
  clock.advance(300s);
  EXPECT_EQ(api.unmet(), 0u);
}

TEST_F(LeaseCandidateTest, ABrokenWatchReadsTheCandidateThenWatchesAgain) {
  auto w = published();
  w->fail("connection reset");
  clock.advance(400ms);
  EXPECT_EQ(api.requests().size(), 2u);  // backoff first
  // A ping landed while the watch was down: the read sees it and answers it.
  api.expect("GET", kCandidateObject).respond(200, candidate("5", kOldTime, kLaterTime));
  expectRenew("5").respond(200, candidate("6", kLaterTime, kLaterTime));
  auto again = api.expect("GET", kCandidateCollection).query(watchQuery("6")).stream();
  clock.advance(100ms);
  EXPECT_EQ(api.unmet(), 0u);
  EXPECT_TRUE(again->opened());
  EXPECT_EQ(problems.size(), 1u);
}

TEST_F(LeaseCandidateTest, ACleanWatchEndResumesFromTheLastResourceVersion) {
  auto w = published();
  w->send(event("BOOKMARK", R"({"kind":"LeaseCandidate","metadata":{"resourceVersion":"8"}})"));
  auto again = api.expect("GET", kCandidateCollection).query(watchQuery("8")).stream();
  w->end();
  clock.runDue();
  EXPECT_TRUE(again->opened());
}

struct StopCase {
  const char* name;
  int deleteAnswer;
  bool problem;
};

void PrintTo(const StopCase& c, std::ostream* os) {
  *os << c.name;
}

const StopCase kStopCases[] = {
    {"Deleted", 200, false},
    {"AlreadyGone", 404, false},
    {"DeleteFailsButStopFinishes", 500, true},
};

class LeaseCandidateStop : public LeaseCandidateTest,
                           public ::testing::WithParamInterface<StopCase> {};

TEST_P(LeaseCandidateStop, Case) {
  const StopCase& c = GetParam();
  auto w = published();
  api.expect("DELETE", kCandidateObject).respond(c.deleteAnswer, "");
  bool done = false;
  lc->stop([&] { done = true; });
  EXPECT_TRUE(w->cancelled());
  EXPECT_FALSE(done);
  clock.runDue();
  EXPECT_TRUE(done);
  EXPECT_EQ(problems.size(), c.problem ? 1u : 0u);
  bool again = false;
  lc->stop([&] { again = true; });  // a second stop finishes at once
  EXPECT_TRUE(again);
  clock.advance(600s);  // no renewals after stop (the fake fails on any)
}

INSTANTIATE_TEST_SUITE_P(LeaseCandidate, LeaseCandidateStop, ::testing::ValuesIn(kStopCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(LeaseCandidateTest, StopWhileTheCreateIsInFlightDeletesAfterItsAnswer) {
  auto create = expectCreate().hold();
  lc->start();
  bool done = false;
  lc->stop([&] { done = true; });
  EXPECT_EQ(api.requests().size(), 1u);  // no DELETE beside the POST
  api.expect("DELETE", kCandidateObject).respond(200, "");
  create->reply(201, candidate("1", kOldTime));
  clock.runDue();
  EXPECT_TRUE(done);
  EXPECT_EQ(api.unmet(), 0u);
}

// Same-second ties (the controller's tie-break has seconds): listed after each create and 2 s
// later; a candidate for the same Lease in the same second with a smaller name moves ours.
std::string listed(const std::vector<std::array<std::string, 3>>& items) {  // name, lease, created
  std::string s = R"({"kind":"LeaseCandidateList","items":[)";
  for (std::size_t i = 0; i < items.size(); ++i) {
    s += std::string(i ? "," : "") + R"({"metadata":{"name":")" + items[i][0] +
         R"(","creationTimestamp":")" + items[i][2] + R"("},"spec":{"leaseName":")" + items[i][1] +
         R"("}})";
  }
  return s + "]}";
}

struct TieCase {
  const char* name;
  std::string firstList;   // right after the create
  std::string secondList;  // 2 s later ("" : not reached)
  bool moves;
};

void PrintTo(const TieCase& c, std::ostream* os) {
  *os << c.name;
}

const std::string kUs = "web-0-1a2b3c4d";
const std::string kSec = "2026-12-01T10:00:00Z";
const std::string kLater = "2026-12-01T10:00:01Z";

const TieCase kTieCases[] = {
    {"Alone", listed({{kUs, "my-app", kSec}}), listed({{kUs, "my-app", kSec}}), false},
    {"SmallerNameSameSecondMovesUs", listed({{"a-0", "my-app", kSec}, {kUs, "my-app", kSec}}), "",
     true},
    {"GreaterNameSameSecondStays", listed({{kUs, "my-app", kSec}, {"z-0", "my-app", kSec}}),
     listed({{kUs, "my-app", kSec}, {"z-0", "my-app", kSec}}), false},
    {"OtherSecondStays", listed({{"a-0", "my-app", kLater}, {kUs, "my-app", kSec}}),
     listed({{"a-0", "my-app", kLater}, {kUs, "my-app", kSec}}), false},
    {"OtherLeaseIgnored", listed({{"a-0", "other", kSec}, {kUs, "my-app", kSec}}),
     listed({{"a-0", "other", kSec}, {kUs, "my-app", kSec}}), false},
    {"CreatedLaterInOurSecondSeenBySecondCheck", listed({{kUs, "my-app", kSec}}),
     listed({{"a-0", "my-app", kSec}, {kUs, "my-app", kSec}}), true},
};

class LeaseCandidateTie : public LeaseCandidateTest, public ::testing::WithParamInterface<TieCase> {
 public:
  LeaseCandidateTie() : LeaseCandidateTest(10) {}
};

TEST_P(LeaseCandidateTie, Case) {
  const TieCase& c = GetParam();
  expectCreate().respond(201, candidate("1", kOldTime));
  api.expect("GET", kCandidateCollection).query(::testing::IsEmpty()).respond(200, c.firstList);
  auto w = api.expect("GET", kCandidateCollection).query(watchQuery("1")).stream();
  if (!c.secondList.empty()) {
    api.expect("GET", kCandidateCollection).query(::testing::IsEmpty()).respond(200, c.secondList);
  }
  lc->start();
  clock.runDue();
  ASSERT_TRUE(w->opened());
  w->open();
  clock.advance(500ms);  // short of the 1 s before a move
  if (c.moves) {
    // Deleted and created again (watch included); the new one is alone in its second.
    api.expect("DELETE", kCandidateObject).respond(200, "");
    expectCreate().respond(201, candidate("9", kLaterTime));
    api.expect("GET", kCandidateCollection).query(::testing::IsEmpty()).respond(200, listed({}));
    api.expect("GET", kCandidateCollection).query(watchQuery("9")).stream();
    api.expect("GET", kCandidateCollection).query(::testing::IsEmpty()).respond(200, listed({}));
    clock.advance(3s);
    EXPECT_TRUE(w->cancelled());
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_THAT(problems[0], HasSubstr("creation second"));
  } else {
    EXPECT_TRUE(problems.empty());
  }
  clock.advance(3s);
  EXPECT_EQ(api.unmet(), 0u);
}

INSTANTIATE_TEST_SUITE_P(LeaseCandidate, LeaseCandidateTie, ::testing::ValuesIn(kTieCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(LeaseCandidateTest, StopBeforeStartSendsNothing) {
  bool done = false;
  lc->stop([&] { done = true; });
  EXPECT_TRUE(done);
}

}  // namespace
}  // namespace leasehold::testing_support

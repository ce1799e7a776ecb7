// PodLabeler on FakeApiClient and FakeClock: one merge patch per change, only the latest wanted
// value sent (never a queue of stale ones), failures retried with exponential backoff and jitter
// up to the cap, drain on exit.
#include "kube/PodLabeler.h"

#include <gtest/gtest.h>

#include "FakeApiClient.h"

namespace leasehold::testing_support {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kPod = "/api/v1/namespaces/ns/pods/web-0";
const std::string kTrue = R"({"metadata":{"labels":{"leasehold.io/leader":"true"}}})";
const std::string kFalse = R"({"metadata":{"labels":{"leasehold.io/leader":"false"}}})";

class PodLabelerTest : public ::testing::Test {
 protected:
  PodLabelerTest() {
    labeler = std::make_unique<kube::PodLabeler>(
        api, clock, kube::PodRef{"ns", "web-0"}, "leasehold.io/leader", [this] { return jitter; },
        kube::PodLabelerOptions{500ms, 30s, 4s});
    labeler->setFailureHandler([this](const std::string& f) { failures.push_back(f); });
    labeler->setAppliedHandler([this](bool v) { applied.push_back(v); });
  }
  ~PodLabelerTest() override { labeler.reset(); }

  FakeApiClient::Expectation& expectPatch(const std::string& body) {
    return api.expect("PATCH", kPod)
        .verb("patch")
        .contentType(::testing::Eq("application/merge-patch+json"))
        .body(::testing::Eq(body));
  }

  time::FakeClock clock;
  FakeApiClient api{clock};
  double jitter = 0.0;
  std::vector<std::string> failures;
  std::vector<bool> applied;
  std::unique_ptr<kube::PodLabeler> labeler;
};

TEST_F(PodLabelerTest, PatchesTheLabelOnItsOwnPod) {
  expectPatch(kTrue).respond(200, "{}");
  labeler->set(true);
  EXPECT_FALSE(labeler->applied());
  clock.runDue();
  EXPECT_EQ(labeler->applied(), true);
  EXPECT_THAT(applied, ElementsAre(true));
  EXPECT_EQ(api.requests().at(0).deadline, 4s);
  // The same value again costs no request (the fake fails on any).
  labeler->set(true);
  clock.runDue();
  EXPECT_EQ(api.requests().size(), 1u);
}

TEST_F(PodLabelerTest, OnlyTheLatestWantedValueIsSent) {
  auto first = expectPatch(kTrue).hold();
  labeler->set(true);
  ASSERT_TRUE(first->made());
  // Leadership flaps while the first patch is in flight: nothing is sent meanwhile...
  labeler->set(false);
  labeler->set(true);
  labeler->set(false);
  EXPECT_EQ(api.requests().size(), 1u);
  // ...and then one patch with the value wanted now, not the ones in between.
  expectPatch(kFalse).respond(200, "{}");
  first->reply(200, "{}");
  clock.runDue();
  EXPECT_EQ(api.requests().size(), 2u);
  EXPECT_EQ(labeler->applied(), false);
  EXPECT_THAT(applied, ElementsAre(true, false));
}

TEST_F(PodLabelerTest, ALatestValueEqualToTheOneInFlightSendsNothingMore) {
  auto first = expectPatch(kTrue).hold();
  labeler->set(true);
  labeler->set(false);
  labeler->set(true);
  first->reply(200, "{}");
  clock.runDue();
  EXPECT_EQ(api.requests().size(), 1u);
  EXPECT_EQ(labeler->applied(), true);
}

// The answers to successive attempts and the wait before each retry: 500 ms doubling to the
// 30 s cap, times 1 + 0.2 * random (here random = 0.5, so +10%); success resets it.
struct BackoffCase {
  const char* name;
  std::vector<int> answers;           // 0: no answer
  std::vector<time::Duration> waits;  // before attempts 2..n
};

void PrintTo(const BackoffCase& c, std::ostream* os) {
  *os << c.name;
}

class PodLabelerBackoffTest : public PodLabelerTest,
                              public ::testing::WithParamInterface<BackoffCase> {};

TEST_P(PodLabelerBackoffTest, RetriesWithExponentialBackoffAndJitter) {
  const BackoffCase& c = GetParam();
  ASSERT_EQ(c.waits.size() + 1, c.answers.size());
  jitter = 0.5;
  for (std::size_t i = 0; i < c.answers.size(); i++) {
    SCOPED_TRACE("attempt " + std::to_string(i + 1));
    auto& e = expectPatch(kTrue);
    if (c.answers[i] == 0) {
      e.noAnswer("timed out after 4s");
    } else {
      e.respond(c.answers[i], c.answers[i] < 300 ? "{}" : "failed");
    }
    if (i == 0) {
      labeler->set(true);
      clock.runDue();
    } else {
      clock.advance(c.waits[i - 1] - 1ms);
      EXPECT_EQ(api.unmet(), 1u) << "retried too early";
      clock.advance(1ms);
    }
    EXPECT_EQ(api.unmet(), 0u);
  }
  const bool ok = c.answers.back() >= 200 && c.answers.back() < 300;
  EXPECT_EQ(labeler->applied(), ok ? std::optional<bool>(true) : std::nullopt);
  EXPECT_EQ(failures.size(), c.answers.size() - (ok ? 1 : 0));
}

INSTANTIATE_TEST_SUITE_P(
    Table, PodLabelerBackoffTest,
    ::testing::Values(BackoffCase{"one_failure", {500, 200}, {550ms}},
                      BackoffCase{
                          "doubling", {503, 0, 429, 403, 200}, {550ms, 1100ms, 2200ms, 4400ms}},
                      BackoffCase{"capped_at_thirty_seconds",
                                  {500, 500, 500, 500, 500, 500, 500, 500, 500},
                                  {550ms, 1100ms, 2200ms, 4400ms, 8800ms, 17600ms, 33s, 33s}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(PodLabelerTest, AFailureNamesThePodAndTheRetry) {
  expectPatch(kTrue).respond(403, statusBody(403, "Forbidden", "cannot patch pods"));
  labeler->set(true);
  clock.runDue();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0],
            "labelling pod ns/web-0 failed: 403 Forbidden: cannot patch pods; retrying in 500ms");
  EXPECT_FALSE(labeler->applied());
  clock.advance(499ms);  // the fake fails the test on an early retry
  expectPatch(kTrue).respond(200, "{}");
  clock.advance(1ms);
  EXPECT_EQ(labeler->applied(), true);
}

TEST_F(PodLabelerTest, ChangesDuringABackoffWaitForIt) {
  expectPatch(kTrue).respond(500, "failed");
  labeler->set(true);
  clock.runDue();
  // A burst of changes must not hammer a failing server: they wait for the retry.
  labeler->set(false);
  labeler->set(true);
  labeler->set(false);
  EXPECT_EQ(api.requests().size(), 1u);
  expectPatch(kFalse).respond(200, "{}");
  clock.advance(500ms);
  EXPECT_EQ(labeler->applied(), false);
}

TEST_F(PodLabelerTest, SuccessResetsTheBackoff) {
  expectPatch(kTrue).respond(500, "failed");
  labeler->set(true);
  clock.runDue();
  expectPatch(kTrue).respond(500, "failed");
  clock.advance(500ms);
  expectPatch(kTrue).respond(200, "{}");
  clock.advance(1s);
  ASSERT_EQ(labeler->applied(), true);
  expectPatch(kFalse).respond(500, "failed");
  labeler->set(false);
  clock.runDue();
  EXPECT_THAT(failures.back(), HasSubstr("retrying in 500ms"));
  expectPatch(kFalse).respond(200, "{}");
  clock.advance(500ms);
  EXPECT_EQ(labeler->applied(), false);
}

TEST_F(PodLabelerTest, DrainFinishesWhenTheWantedValueIsApplied) {
  bool done = false;
  labeler->drain(2s, [&] { done = true; });
  EXPECT_TRUE(done);  // nothing wanted: settled

  expectPatch(kTrue).after(300ms).respond(200, "{}");
  labeler->set(true);
  done = false;
  labeler->drain(2s, [&] { done = true; });
  clock.advance(299ms);
  EXPECT_FALSE(done);
  clock.advance(1ms);
  EXPECT_TRUE(done);
}

TEST_F(PodLabelerTest, DrainGivesUpAfterTheBudget) {
  expectPatch(kFalse).respond(503, "failed");
  labeler->set(false);
  clock.runDue();  // failed: a retry is waiting
  int done = 0;
  labeler->drain(300ms, [&] { done++; });
  clock.advance(299ms);
  EXPECT_EQ(done, 0);
  clock.advance(1ms);
  EXPECT_EQ(done, 1);
  // The retry still goes out after the drain gave up; it does not finish the drain again.
  expectPatch(kFalse).respond(200, "{}");
  clock.advance(200ms);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(labeler->applied(), false);
}

}  // namespace
}  // namespace leasehold::testing_support

// EventRecorder on FakeApiClient and FakeClock: the Event it POSTs, repeats merged into a series
// by PATCH (count + 1) like client-go's EventCorrelator, an expired series (404) created afresh,
// the bounded queue (oldest dropped), failures reported and never retried, drain on exit.
#include "kube/EventRecorder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "FakeApiClient.h"
#include "LeaseJson.h"

namespace leasehold::testing_support {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using json = nlohmann::json;

const std::string kEvents = "/api/v1/namespaces/ns/events";

election::LeaseRecord leaseWithUid(const std::string& uid, const std::string& rv) {
  election::LeaseRecord r;
  r.resourceVersion.value = rv;
  json object = leaseObject("web-0_1", rv);
  object["metadata"]["uid"] = uid;
  r.opaque = object.dump();
  return r;
}

class EventRecorderTest : public ::testing::Test {
 protected:
  explicit EventRecorderTest(std::size_t maxQueued = 16) {
    recorder = std::make_unique<kube::EventRecorder>(
        api, clock, kube::LeaseEventTarget{kLeaseName, kNs, "web-0_1"},
        kube::EventRecorderOptions{maxQueued, 3s});
    recorder->setFailureHandler([this](const std::string& f) { failures.push_back(f); });
  }
  ~EventRecorderTest() override { recorder.reset(); }

  // The name the last POST gave its Event.
  std::string lastPostedName() const {
    for (auto it = api.requests().rbegin(); it != api.requests().rend(); ++it) {
      if (it->method == "POST") return json::parse(it->body)["metadata"]["name"];
    }
    ADD_FAILURE() << "no POST made";
    return "";
  }

  time::FakeClock clock;
  FakeApiClient api{clock};
  std::vector<std::string> failures;
  std::unique_ptr<kube::EventRecorder> recorder;
};

TEST_F(EventRecorderTest, PostsALeaderElectionEventAboutTheLease) {
  api.expect("POST", kEvents)
      .verb("create")
      .contentType(::testing::Eq("application/json"))
      .respond(201, "{}");
  recorder->record(leaseWithUid("uid-1", "42"), "web-0_1 became leader");
  EXPECT_EQ(recorder->pending(), 1u);
  clock.runDue();
  EXPECT_EQ(recorder->pending(), 0u);
  EXPECT_EQ(recorder->posted(), 1u);
  const json body = json::parse(api.requests().at(0).body);
  EXPECT_THAT(body["metadata"]["name"].get<std::string>(), MatchesRegex("l\\.[0-9a-f]+"));
  EXPECT_EQ(body["metadata"]["namespace"], "ns");
  EXPECT_EQ(body["involvedObject"]["kind"], "Lease");
  EXPECT_EQ(body["involvedObject"]["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ(body["involvedObject"]["name"], "l");
  EXPECT_EQ(body["involvedObject"]["uid"], "uid-1");
  EXPECT_EQ(body["involvedObject"]["resourceVersion"], "42");
  EXPECT_EQ(body["reason"], "LeaderElection");
  EXPECT_EQ(body["type"], "Normal");
  EXPECT_EQ(body["message"], "web-0_1 became leader");
  EXPECT_EQ(body["count"], 1);
  EXPECT_EQ(body["reportingInstance"], "web-0_1");
  EXPECT_EQ(api.requests().at(0).deadline, 3s);
  EXPECT_TRUE(failures.empty());
}

TEST_F(EventRecorderTest, WithoutALeaseTheEventNamesOnlyTheObject) {
  api.expect("POST", kEvents).respond(201, "{}");
  recorder->record(std::nullopt, "web-0_1 stopped leading");
  clock.runDue();
  const json body = json::parse(api.requests().at(0).body);
  EXPECT_FALSE(body["involvedObject"].contains("uid"));
  EXPECT_FALSE(body["involvedObject"].contains("resourceVersion"));
  EXPECT_EQ(body["involvedObject"]["name"], "l");
}

// One step of a series: an event recorded, and the request it must cause.
struct SeriesStep {
  std::string uid;
  std::string message;
  std::string method;  // POST: a new Event; PATCH: one more occurrence of an earlier one
  int seriesOf;        // PATCH: the step whose POST created the Event (index)
  std::int64_t count;  // PATCH: the count it sets
  int answer;          // the server's answer; a 404 on a PATCH must cause a POST (answered 201)
};

const std::string kBecame = "a became leader";
const std::string kStopped = "a stopped leading";

// The steps the table is written in: most are about "a became leader" on the Lease "u1".
SeriesStep post(int answer, const std::string& message = kBecame, const std::string& uid = "u1") {
  return {uid, message, "POST", 0, 1, answer};
}
SeriesStep patch(int seriesOf, std::int64_t count, int answer,
                 const std::string& message = kBecame) {
  return {"u1", message, "PATCH", seriesOf, count, answer};
}

struct SeriesCase {
  const char* name;
  std::uint64_t wantPosted;
  std::uint64_t wantFailed;
  std::vector<SeriesStep> steps;
};

// A function, not braces, so that clang-format keeps each case of the table on a line or two.
SeriesCase series(const char* name, std::uint64_t wantPosted, std::uint64_t wantFailed,
                  std::vector<SeriesStep> steps) {
  return {name, wantPosted, wantFailed, std::move(steps)};
}

void PrintTo(const SeriesCase& c, std::ostream* os) {
  *os << c.name;
}

class EventSeriesTest : public EventRecorderTest,
                        public ::testing::WithParamInterface<SeriesCase> {};

TEST_P(EventSeriesTest, RepeatsPatchTheEventAlreadyPosted) {
  const SeriesCase& c = GetParam();
  std::vector<std::string> names;  // per step: the Event it created or patched
  for (std::size_t i = 0; i < c.steps.size(); i++) {
    const SeriesStep& step = c.steps[i];
    SCOPED_TRACE("step " + std::to_string(i));
    const std::string answerBody = step.answer == 404
                                       ? statusBody(404, "NotFound", "events \"x\" not found")
                                   : step.answer >= 300 ? "failed"
                                                        : "{}";
    if (step.method == "POST") {
      api.expect("POST", kEvents)
          .body(HasSubstr("\"message\":\"" + step.message + "\""))
          .respond(step.answer, answerBody);
    } else {
      api.expect("PATCH", kEvents + "/" + names.at(static_cast<std::size_t>(step.seriesOf)))
          .verb("patch")
          .contentType(::testing::Eq("application/merge-patch+json"))
          .body(HasSubstr("\"count\":" + std::to_string(step.count)))
          .respond(step.answer, answerBody);
      if (step.answer == 404) {
        api.expect("POST", kEvents)
            .body(HasSubstr("\"message\":\"" + step.message + "\""))
            .respond(201, "{}");
      }
    }
    recorder->record(leaseWithUid(step.uid, "1"), step.message);
    clock.runDue();
    EXPECT_EQ(api.unmet(), 0u);
    names.push_back(step.method == "POST" || step.answer == 404 ? lastPostedName() : "");
  }
  EXPECT_EQ(recorder->posted(), c.wantPosted);
  EXPECT_EQ(recorder->failed(), c.wantFailed);
  EXPECT_EQ(failures.size(), c.wantFailed);
}

INSTANTIATE_TEST_SUITE_P(
    Table, EventSeriesTest,
    ::testing::Values(
        series("the_same_message_counts_up", 3, 0, {post(201), patch(0, 2, 200), patch(0, 3, 200)}),
        series("another_message_is_another_event", 4, 0,
               {post(201), post(201, kStopped), patch(0, 2, 200), patch(1, 2, 200, kStopped)}),
        // A new Lease object (deleted and created again) starts its own series.
        series("another_lease_uid_is_another_event", 2, 0, {post(201), post(201, kBecame, "u2")}),
        // Events expire after an hour: the PATCH finds nothing, a new Event is created, and
        // later repeats patch the new one.
        series("an_expired_event_is_created_afresh", 3, 0,
               {post(201), patch(0, 2, 404), patch(1, 2, 200)}),
        // A failed POST is not retried and not remembered: the next repeat POSTs again.
        series("a_failed_post_starts_no_series", 1, 1, {post(500), post(201)}),
        // A failed PATCH does not count: the next repeat sets the same count again.
        series("a_failed_patch_does_not_count", 3, 1,
               {post(201), patch(0, 2, 503), patch(0, 2, 200), patch(0, 3, 200)})),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(EventRecorderTest, AFailureIsReportedWithoutRetrying) {
  api.expect("POST", kEvents).respond(403, statusBody(403, "Forbidden", "cannot create events"));
  recorder->record(std::nullopt, "m");
  clock.advance(10min);  // the fake fails the test on any retry
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0], "posting an event failed: 403 Forbidden: cannot create events");
  EXPECT_EQ(recorder->failed(), 1u);
}

TEST_F(EventRecorderTest, EventsArePostedOneAtATimeInOrder) {
  auto first = api.expect("POST", kEvents).body(HasSubstr("\"message\":\"one\"")).hold();
  auto second = api.expect("POST", kEvents).body(HasSubstr("\"message\":\"two\"")).hold();
  recorder->record(std::nullopt, "one");
  recorder->record(std::nullopt, "two");
  EXPECT_TRUE(first->made());
  EXPECT_FALSE(second->made());
  first->reply(201, "{}");
  EXPECT_TRUE(second->made());
  second->reply(201, "{}");
  EXPECT_EQ(recorder->posted(), 2u);
}

class SmallQueueEventRecorderTest : public EventRecorderTest {
 protected:
  SmallQueueEventRecorderTest() : EventRecorderTest(2) {}
};

TEST_F(SmallQueueEventRecorderTest, AFullQueueDropsTheOldestEvent) {
  auto inflight = api.expect("POST", kEvents).body(HasSubstr("\"message\":\"e1\"")).hold();
  recorder->record(std::nullopt, "e1");  // in flight: not in the queue
  recorder->record(std::nullopt, "e2");
  recorder->record(std::nullopt, "e3");
  recorder->record(std::nullopt, "e4");  // drops e2
  recorder->record(std::nullopt, "e5");  // drops e3
  EXPECT_EQ(recorder->pending(), 3u);
  EXPECT_EQ(recorder->failed(), 2u);
  EXPECT_THAT(failures, ElementsAre("event queue full: dropped the oldest event",
                                    "event queue full: dropped the oldest event"));
  // The newest say most about the present: e4 and e5 go out, in order.
  api.expect("POST", kEvents).body(HasSubstr("\"message\":\"e4\"")).respond(201, "{}");
  api.expect("POST", kEvents).body(HasSubstr("\"message\":\"e5\"")).respond(201, "{}");
  inflight->reply(201, "{}");
  clock.runDue();
  EXPECT_EQ(recorder->posted(), 3u);
  EXPECT_EQ(recorder->pending(), 0u);
}

TEST_F(EventRecorderTest, DrainWithNothingPendingFinishesAtOnce) {
  bool done = false;
  recorder->drain(2s, [&] { done = true; });
  EXPECT_TRUE(done);
}

TEST_F(EventRecorderTest, DrainWaitsForQueuedEventsToBeAnswered) {
  api.expect("POST", kEvents).after(300ms).respond(201, "{}");
  api.expect("POST", kEvents).after(300ms).respond(500, "failed");
  recorder->record(std::nullopt, "became leader");
  recorder->record(std::nullopt, "stopped leading");
  bool done = false;
  recorder->drain(2s, [&] { done = true; });
  clock.advance(599ms);
  EXPECT_FALSE(done);
  clock.advance(1ms);
  EXPECT_TRUE(done);  // answered (one failed): nothing left to wait for
  EXPECT_EQ(recorder->posted(), 1u);
  EXPECT_EQ(recorder->failed(), 1u);
}

TEST_F(EventRecorderTest, DrainGivesUpAfterTheBudget) {
  auto stuck = api.expect("POST", kEvents).hold();
  recorder->record(std::nullopt, "stopped leading");
  int done = 0;
  recorder->drain(2s, [&] { done++; });
  clock.advance(1999ms);
  EXPECT_EQ(done, 0);
  clock.advance(1ms);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(recorder->pending(), 1u);
  stuck->reply(201, "{}");  // a late answer does not finish the drain twice
  EXPECT_EQ(done, 1);
}

TEST_F(EventRecorderTest, RepeatPatchBody) {
  const json patch = json::parse(kube::EventRecorder::repeatPatch(5, 1'700'000'000'000'000'000));
  EXPECT_EQ(patch, json({{"count", 5}, {"lastTimestamp", "2023-11-14T22:13:20Z"}}));
}

}  // namespace
}  // namespace leasehold::testing_support

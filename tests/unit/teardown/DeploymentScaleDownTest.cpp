// DeploymentScaleDown on FakeApiClient and FakeClock: the scale patch, the wait for the pods of
// the selector its answer names, and each way it ends (the pods gone, no Deployment, a refusal,
// the timeout), table-driven; the retries of transient failures and the watch's re-list.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "FakeApiClient.h"
#include "FakeClock.h"
#include "teardown/DeploymentScaleDown.h"

namespace leasehold::teardown {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using ::testing::HasSubstr;
using testing_support::FakeApiClient;
using testing_support::statusBody;

constexpr const char* kScale = "/apis/apps/v1/namespaces/ns/deployments/demo/scale";
constexpr const char* kPods = "/api/v1/namespaces/ns/pods";
constexpr const char* kSelector =
    "app.kubernetes.io/instance=demo,app.kubernetes.io/name=leasehold";
const std::string kListQuery =
    "labelSelector=app.kubernetes.io%2Finstance%3Ddemo%2Capp.kubernetes.io%2Fname%3Dleasehold";

std::string scaleAnswer(int had, const std::string& selector = kSelector) {
  return json{{"kind", "Scale"},
              {"apiVersion", "autoscaling/v1"},
              {"metadata", {{"name", "demo"}, {"namespace", "ns"}}},
              {"spec", {{"replicas", 0}}},
              {"status", {{"replicas", had}, {"selector", selector}}}}
      .dump();
}

std::string podList(const std::vector<std::string>& names, const std::string& rv) {
  json items = json::array();
  for (const auto& n : names)
    items.push_back({{"metadata", {{"name", n}}}});
  return json{{"kind", "PodList"}, {"metadata", {{"resourceVersion", rv}}}, {"items", items}}
      .dump();
}

std::string podEvent(const std::string& type, const std::string& name) {
  return json{{"type", type}, {"object", {{"kind", "Pod"}, {"metadata", {{"name", name}}}}}}.dump();
}

struct Harness {
  time::FakeClock clock;
  FakeApiClient api{clock};
  std::string out, err;
  int exitCode = -1;
  std::unique_ptr<DeploymentScaleDown> scaleDown;

  void start(time::Duration timeout = 40s) {
    ScaleDownOptions o;
    o.ns = "ns";
    o.deployment = "demo";
    o.timeout = timeout;
    scaleDown = std::make_unique<DeploymentScaleDown>(
        api, clock, o,
        ScaleDownOutput{[this](const std::string& l) { out += l + "\n"; },
                        [this](const std::string& l) { err += l + "\n"; }});
    scaleDown->run([this](int code) {
      EXPECT_EQ(exitCode, -1) << "done twice";
      exitCode = code;
    });
    clock.runDue();
  }
  void expectScale(int code, const std::string& body) {
    api.expect("PATCH", kScale)
        .verb("patch")
        .contentType(::testing::Eq("application/merge-patch+json"))
        .body(::testing::Eq(R"({"spec":{"replicas":0}})"))
        .respond(code, body);
  }
  void expectList(const std::vector<std::string>& names, const std::string& rv) {
    api.expect("GET", std::string(kPods) + "?" + kListQuery)
        .verb("list")
        .respond(200, podList(names, rv));
  }
  std::shared_ptr<FakeApiClient::Stream> expectWatch(const std::string& rv) {
    return api.expect("GET", kPods)
        .verb("watch")
        .query(::testing::AllOf(HasSubstr(kListQuery + "&resourceVersion=" + rv + "&"),
                                HasSubstr("watch=true")))
        .stream();
  }
  // The Deployment had 2 replicas: scaled, its pods demo-a and demo-b listed at "41", and the
  // watch from there (not opened yet).
  std::shared_ptr<FakeApiClient::Stream> expectScaledWithTwoPods() {
    expectScale(200, scaleAnswer(2));
    expectList({"demo-a", "demo-b"}, "41");
    return expectWatch("41");
  }
};

TEST(DeploymentScaleDownTest, EachWayItEnds) {
  struct Case {
    std::string name;
    std::function<void(Harness&)> script;  // the answers, before the start
    // What happens after the start: the pods' deletions, time passing.
    std::function<void(Harness&)> then;
    int exitCode;
    std::string out, err;  // substrings; err "" = must be empty
    time::Duration timeout = 40s;
  };
  std::shared_ptr<FakeApiClient::Stream> watch;
  const std::vector<Case> cases{
      {"scaled and its pods gone", [&](Harness& h) { watch = h.expectScaledWithTwoPods(); },
       [&](Harness& h) {
         watch->open();
         h.clock.advance(1s);
         watch->send(podEvent("MODIFIED", "demo-a"));  // its deletionTimestamp set: still there
         watch->send(podEvent("DELETED", "demo-a"));
         EXPECT_EQ(h.exitCode, -1) << "demo-b is still there";
         h.clock.advance(1500ms);
         watch->send(podEvent("DELETED", "demo-b"));
         EXPECT_TRUE(watch->cancelled());
       },
       0, "no pod of deployment ns/demo left after 2.5s", ""},
      {"no pod to begin with",
       [](Harness& h) {
         h.expectScale(200, scaleAnswer(0));
         h.expectList({}, "41");
       },
       nullptr, 0, "scaled to 0 replicas (its status had 0)", ""},
      {"no Deployment",
       [](Harness& h) {
         h.expectScale(404, statusBody(404, "NotFound", "deployments.apps \"demo\" not found"));
       },
       nullptr, 0, "deployment ns/demo not found: nothing to scale down", ""},
      {"the scale refused",
       [](Harness& h) {
         h.expectScale(403,
                       statusBody(403, "Forbidden", "cannot patch resource \"deployments/scale\""));
       },
       nullptr, 1, "",
       "patch deployments/scale \"demo\" in namespace \"ns\" failed (403): this ServiceAccount "
       "may not patch deployments/scale \"demo\" (RBAC): its Role needs the rule {apiGroups: "
       "[\"apps\"], resources: [deployments/scale], resourceNames: [demo], verbs: [patch]}"},
      {"the pods' list refused",
       [](Harness& h) {
         h.expectScale(200, scaleAnswer(3));
         h.api.expect("GET", std::string(kPods) + "?" + kListQuery)
             .respond(403, statusBody(403, "Forbidden", "cannot list resource \"pods\""));
       },
       nullptr, 1, "",
       "list pods in namespace \"ns\" failed (403): this ServiceAccount may not list pods "
       "(RBAC): its Role needs the rule {apiGroups: [\"\"], resources: [pods], verbs: [list]}"},
      {"the watch refused",
       [&](Harness& h) {
         h.expectScale(200, scaleAnswer(1));
         h.expectList({"demo-a"}, "41");
         watch = h.expectWatch("41");
       },
       [&](Harness&) {
         watch->status(403, statusBody(403, "Forbidden", "cannot watch resource \"pods\""));
       },
       1, "", "verbs: [watch]}"},
      {"credentials refused",
       [](Harness& h) { h.expectScale(401, statusBody(401, "Unauthorized", "Unauthorized")); },
       nullptr, 1, "", "failed (401): the credentials were not accepted"},
      {"a pod outlives the timeout", [&](Harness& h) { watch = h.expectScaledWithTwoPods(); },
       [&](Harness& h) {
         watch->open();
         watch->send(podEvent("DELETED", "demo-a"));
         h.clock.advance(40s - 1ms);
         EXPECT_EQ(h.exitCode, -1) << "before the timeout";
         h.clock.advance(1ms);
         EXPECT_TRUE(watch->cancelled());
       },
       1, "",
       "timed out after 40s waiting for the pods of deployment ns/demo "
       "(app.kubernetes.io/instance=demo,app.kubernetes.io/name=leasehold) to go; still there: "
       "demo-b"},
      {"the API server never answers",
       [](Harness& h) {
         for (int i = 0; i < 3; ++i)
           h.api.expect("PATCH", kScale).noAnswer("timed out after 5s");
       },
       [](Harness& h) { h.clock.advance(3s); }, 1, "retrying in 1s",
       "timed out after 3s before deployment ns/demo was scaled to 0; last problem: scaling "
       "deployment ns/demo: no answer",
       3s},
      {"an answer with no selector", [](Harness& h) { h.expectScale(200, scaleAnswer(3, "")); },
       nullptr, 1, "", "has no status.selector"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Harness h;
    c.script(h);
    h.start(c.timeout);
    if (c.then) c.then(h);
    EXPECT_EQ(h.exitCode, c.exitCode);
    EXPECT_THAT(h.out, HasSubstr(c.out));
    if (c.err.empty()) {
      EXPECT_EQ(h.err, "");
    } else {
      EXPECT_THAT(h.err, HasSubstr(c.err));
      EXPECT_EQ(std::count(h.err.begin(), h.err.end(), '\n'), 1) << h.err;
    }
    h.api.verify();
    watch.reset();
  }
}

TEST(DeploymentScaleDownTest, RetriesTransientFailuresEverySecond) {
  Harness h;
  h.api.expect("PATCH", kScale).respond(503, statusBody(503, "ServiceUnavailable", "etcd"));
  h.api.expect("PATCH", kScale).respond(429, "Too many requests");
  h.expectScale(200, scaleAnswer(1));
  h.api.expect("GET", std::string(kPods) + "?" + kListQuery).noAnswer("connection reset");
  h.expectList({}, "50");
  h.start();
  EXPECT_EQ(h.api.requests().size(), 1u);
  h.clock.advance(999ms);
  EXPECT_EQ(h.api.requests().size(), 1u) << "retried before retryInterval";
  h.clock.advance(1ms);
  EXPECT_EQ(h.api.requests().size(), 2u);
  h.clock.advance(1s);  // the patch, then the list that goes unanswered
  EXPECT_EQ(h.exitCode, -1);
  h.clock.advance(1s);
  EXPECT_EQ(h.exitCode, 0);
  EXPECT_EQ(h.err, "");
  EXPECT_THAT(h.out, HasSubstr("scaling deployment ns/demo: 503"));
  EXPECT_THAT(h.out, HasSubstr("listing the pods: no answer"));
}

TEST(DeploymentScaleDownTest, ListsAgainWhenTheWatchEndsOrExpires) {
  Harness h;
  auto first = h.expectScaledWithTwoPods();
  h.expectList({"demo-b"}, "60");  // demo-a went while no watch was open
  auto second = h.expectWatch("60");
  h.expectList({"demo-b"}, "70");
  auto third = h.expectWatch("70");
  h.start();
  first->open();
  first->end();  // timeoutSeconds: a clean end, listed again at once
  h.clock.runDue();
  second->open();
  second->send(
      json{{"type", "ERROR"}, {"object", json::parse(statusBody(410, "Expired", "too old"))}}
          .dump());
  h.clock.runDue();
  EXPECT_TRUE(second->cancelled());
  third->open();
  third->send(podEvent("BOOKMARK", "demo-b"));
  EXPECT_EQ(h.exitCode, -1);
  third->send(podEvent("DELETED", "demo-b"));
  EXPECT_EQ(h.exitCode, 0);
  EXPECT_EQ(h.err, "");
}

TEST(DeploymentScaleDownTest, EscapesEverySelectorCharacter) {
  EXPECT_EQ(DeploymentScaleDown::selectorQuery("a.b/c=d,e!=f,g in (h,i)"),
            "labelSelector=a.b%2Fc%3Dd%2Ce%21%3Df%2Cg%20in%20%28h%2Ci%29");
}

}  // namespace
}  // namespace leasehold::teardown

// HolderPodWatch (--fast-failover's witness) on FakeApiClient and FakeClock: it LISTs and
// WATCHes only the holder's pod (field selector on its name, in this replica's namespace), says
// nothing until HolderExitRule finds proof, then tells once and never from inside follow(); it
// moves its watch with the holder, drops it on unfollow(), watches nothing for a holder that
// recorded no process, and treats a refused or deleted pod as no proof.
#include "kube/HolderPodWatch.h"

#include <gtest/gtest.h>

#include <vector>

#include "FakeApiClient.h"

namespace leasehold::testing_support::holder_pod_watch_test {

using namespace std::chrono_literals;

constexpr const char* kPods = "/api/v1/namespaces/demo/pods";

std::string listPath(const std::string& pod) {
  return std::string(kPods) + "?fieldSelector=metadata.name%3D" + pod;
}
std::string watchPath(const std::string& pod, const std::string& rv) {
  return std::string(kPods) + "?allowWatchBookmarks=true&fieldSelector=metadata.name%3D" + pod +
         "&resourceVersion=" + rv + "&timeoutSeconds=300&watch=true";
}

// The pod of the holder's sidecar: running, or terminated at `finishedAt`.
std::string pod(const std::string& name, const std::string& uid, const std::string& finishedAt) {
  const std::string state =
      finishedAt.empty() ? R"({"running":{"startedAt":"2026-12-07T09:00:00Z"}})"
                         : R"({"terminated":{"exitCode":137,"reason":"Error","finishedAt":")" +
                               finishedAt + R"("}})";
  return R"({"metadata":{"name":")" + name + R"(","uid":")" + uid +
         R"(","resourceVersion":"5"},"spec":{"initContainers":[{"name":"leasehold","env":[{"name":"LEASEHOLD_CONTAINER","value":"leasehold"}]}]},"status":{"phase":"Running","initContainerStatuses":[{"name":"leasehold","state":)" +
         state + "}]}}";
}
std::string podList(const std::string& item) {
  return R"({"kind":"PodList","metadata":{"resourceVersion":"20"},"items":[)" + item + "]}";
}
std::string event(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}";
}

election::LeaseRecord lease(const std::string& identity, const std::string& podName,
                            const std::string& uid) {
  election::LeaseRecord r;
  r.holderIdentity = identity;
  r.holderPod = podName;
  r.holderProcess = uid + "/leasehold/" + identity;
  r.acquireTime = *kube::parseMicroTime("2026-12-07T10:00:00.250000Z");
  r.resourceVersion = {"7"};
  return r;
}

class HolderPodWatchTest : public ::testing::Test {
 protected:
  HolderPodWatchTest() {
    kube::HolderPodWatchOptions o;
    o.podNamespace = "demo";
    o.self = {"u-self", "leasehold"};
    o.onVerdict = [this](const std::string& why) { verdicts.push_back(why); };
    o.onProof = [this](const std::string& proof) { proofs.push_back(proof); };
    o.onProblem = [this](const std::string& p) { problems.push_back(p); };
    watch = std::make_unique<kube::HolderPodWatch>(api, clock, o, [] { return 0.0; });
  }
  ~HolderPodWatchTest() override { watch.reset(); }

  // Follows `record`; the callback appends to `told`.
  void follow(const election::LeaseRecord& record) {
    watch->follow(record, [this](std::string proof) { told.push_back(std::move(proof)); });
  }

  // Follows holder IDENTITY in pod NAME (UID uid), whose sidecar runs: the LIST, then the
  // WATCH, opened.
  std::shared_ptr<FakeApiClient::Stream> following(const std::string& identity,
                                                   const std::string& name,
                                                   const std::string& uid) {
    api.expect("GET", listPath(name)).verb("list").respond(200, podList(pod(name, uid, "")));
    auto stream = api.expect("GET", watchPath(name, "20")).verb("watch").stream();
    follow(lease(identity, name, uid));
    clock.runDue();
    EXPECT_TRUE(stream->opened());
    stream->open();
    clock.runDue();
    return stream;
  }

  time::FakeClock clock;
  FakeApiClient api{clock};
  std::unique_ptr<kube::HolderPodWatch> watch;
  std::vector<std::string> verdicts, proofs, problems, told;
};

TEST_F(HolderPodWatchTest, WatchesTheHoldersPodAndTellsOnceWhenItsContainerExited) {
  auto stream = following("web-0_1", "web-0", "u-0");
  EXPECT_TRUE(told.empty());
  EXPECT_EQ(verdicts, std::vector<std::string>{"container leasehold of pod web-0 is running"});

  stream->send(event("MODIFIED", pod("web-0", "u-0", "2026-12-07T10:00:03Z")));
  EXPECT_TRUE(told.empty());  // not from inside the watch's callback either
  clock.runDue();
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].find("exited at 2026-12-07T10:00:03"), std::string::npos) << told[0];
  EXPECT_EQ(proofs, told);
  // Once per follow().
  stream->send(event("MODIFIED", pod("web-0", "u-0", "2026-12-07T10:00:04Z")));
  clock.runDue();
  EXPECT_EQ(told.size(), 1u);
}

TEST_F(HolderPodWatchTest, AnExitAlreadyReportedIsToldAfterTheList) {
  api.expect("GET", listPath("web-0"))
      .respond(200, podList(pod("web-0", "u-0", "2026-12-07T10:00:03Z")));
  api.expect("GET", watchPath("web-0", "20")).stream();
  follow(lease("web-0_1", "web-0", "u-0"));
  EXPECT_TRUE(told.empty());  // never from inside follow()
  clock.runDue();
  EXPECT_EQ(told.size(), 1u);
}

TEST_F(HolderPodWatchTest, AHolderThatRecordedNoProcessIsNotWatched) {
  auto record = lease("web-0_1", "web-0", "u-0");
  record.holderProcess.clear();
  follow(record);  // FakeApiClient fails the test on any request
  clock.advance(1min);
  EXPECT_TRUE(told.empty());
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_NE(verdicts[0].find("did not record its pod and container"), std::string::npos);
}

TEST_F(HolderPodWatchTest, AHolderPodThatIsNoPodNameIsNotWatched) {
  follow(lease("web-0_1", "web-0&fieldSelector=x", "u-0"));  // no request is expected
  clock.advance(1min);
  EXPECT_TRUE(told.empty());
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_NE(verdicts[0].find("is not a pod name"), std::string::npos) << verdicts[0];
}

TEST_F(HolderPodWatchTest, ANewHoldersPodMovesTheWatchAndUnfollowDropsIt) {
  auto first = following("web-0_1", "web-0", "u-0");

  // The same pod, a renewed record: the watch stays.
  auto renewed = lease("web-0_1", "web-0", "u-0");
  renewed.resourceVersion = {"8"};
  follow(renewed);
  clock.runDue();
  EXPECT_FALSE(first->cancelled());

  auto second = following("web-2_1", "web-2", "u-2");
  EXPECT_TRUE(first->cancelled());

  watch->unfollow();
  EXPECT_TRUE(second->cancelled());
  clock.advance(1min);
  EXPECT_TRUE(told.empty());
}

// The pod object gone (a forced delete) is never proof, and neither is a pod of that name
// with another UID.
TEST_F(HolderPodWatchTest, ADeletedOrReplacedPodIsNoProof) {
  auto stream = following("web-0_1", "web-0", "u-0");
  stream->send(event("DELETED", pod("web-0", "u-0", "2026-12-07T10:00:03Z")));
  clock.runDue();
  stream->send(event("ADDED", pod("web-0", "u-new", "2026-12-07T10:00:03Z")));
  clock.runDue();
  EXPECT_TRUE(told.empty());
  ASSERT_EQ(verdicts.size(), 3u);
  EXPECT_NE(verdicts[1].find("a pod object gone is no proof"), std::string::npos);
  EXPECT_NE(verdicts[2].find("not the holder's"), std::string::npos);
}

TEST_F(HolderPodWatchTest, ARefusedListIsNoProofAndIsSaid) {
  api.expect("GET", listPath("web-0"))
      .respond(403, statusBody(403, "Forbidden",
                               "pods is forbidden: User \"system:serviceaccount:demo:web\" cannot "
                               "list resource \"pods\""));
  follow(lease("web-0_1", "web-0", "u-0"));
  clock.runDue();
  EXPECT_TRUE(told.empty());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("the holder's pod watch (--fast-failover) unavailable, the Lease's "
                             "expiry decides instead"),
            std::string::npos)
      << problems[0];
  EXPECT_NE(problems[0].find("cannot list resource"), std::string::npos);
  watch->unfollow();  // the retry is dropped with it
  clock.advance(10min);
}

}  // namespace leasehold::testing_support::holder_pod_watch_test

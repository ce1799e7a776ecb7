// The pod fields --fast-failover reads (kube/PodFacts.h): a pod as kube-apiserver v1.37 sends
// it (a native sidecar under initContainerStatuses, the app under containerStatuses), a
// PodList of one and of none, and bodies that do not decode, each named by its field path.
#include "kube/PodFacts.h"

#include <gtest/gtest.h>

#include "kube/LeaseCodec.h"

namespace leasehold::kube::pod_facts_test {

// Trimmed from `kubectl get pod -o json` on the project's node after `crictl stop` of the
// sidecar: the kubelet restarted it (state running, lastState terminated).
constexpr const char* kPod = R"({"apiVersion":"v1","kind":"Pod",
 "metadata":{"name":"web-0","namespace":"demo","uid":"6f1c-uid","resourceVersion":"812"},
 "spec":{"containers":[{"name":"app","image":"app","env":[{"name":"LEASEHOLD_CONTAINER","value":"leasehold"}]}],
   "initContainers":[{"name":"leasehold","image":"leasehold","restartPolicy":"Always",
     "env":[{"name":"POD_UID","valueFrom":{"fieldRef":{"fieldPath":"metadata.uid"}}},
            {"name":"LEASEHOLD_CONTAINER","value":"leasehold"}]}]},
 "status":{"phase":"Running",
   "initContainerStatuses":[{"name":"leasehold","ready":true,"restartCount":1,
     "state":{"running":{"startedAt":"2026-12-07T10:00:12Z"}},
     "lastState":{"terminated":{"exitCode":137,"reason":"Error",
       "startedAt":"2026-12-07T09:58:00Z","finishedAt":"2026-12-07T10:00:10Z",
       "containerID":"containerd://abc"}}}],
   "containerStatuses":[{"name":"app","ready":true,"restartCount":0,
     "state":{"terminated":{"exitCode":0,"reason":"Completed",
       "finishedAt":"2026-12-07T10:01:00Z"}},"lastState":{}}]}})";

TEST(PodFactsTest, DecodesBothStatusListsAndTheSpecFlags) {
  PodFacts p;
  std::string error;
  ASSERT_TRUE(decodePodFacts(kPod, p, error)) << error;
  EXPECT_EQ(p.name, "web-0");
  EXPECT_EQ(p.uid, "6f1c-uid");
  EXPECT_EQ(p.phase, "Running");
  EXPECT_FALSE(p.deleting);
  EXPECT_FALSE(p.shareProcessNamespace);
  EXPECT_FALSE(p.hostPid);
  ASSERT_EQ(p.containers.size(), 2u);
  const auto& sidecar = p.containers.at("leasehold");
  EXPECT_TRUE(sidecar.namesItself);
  EXPECT_TRUE(sidecar.running);
  EXPECT_FALSE(sidecar.terminated);
  ASSERT_TRUE(sidecar.lastTerminated);
  EXPECT_EQ(sidecar.lastTerminated->finishedAt, parseMicroTime("2026-12-07T10:00:10Z"));
  EXPECT_EQ(sidecar.lastTerminated->reason, "Error");
  EXPECT_EQ(sidecar.lastTerminated->exitCode, 137);
  const auto& app = p.containers.at("app");
  EXPECT_FALSE(app.namesItself);  // it names another container
  EXPECT_FALSE(app.running);
  ASSERT_TRUE(app.terminated);
  EXPECT_EQ(app.terminated->reason, "Completed");
  EXPECT_FALSE(app.lastTerminated);
}

TEST(PodFactsTest, DeletionAndSharedNamespaces) {
  PodFacts p;
  std::string error;
  ASSERT_TRUE(decodePodFacts(
      R"({"metadata":{"uid":"u","deletionTimestamp":"2026-12-07T10:00:00Z"},
          "spec":{"shareProcessNamespace":true,"hostPID":true},"status":{"phase":"Failed"}})",
      p, error))
      << error;
  EXPECT_TRUE(p.deleting);
  EXPECT_TRUE(p.shareProcessNamespace);
  EXPECT_TRUE(p.hostPid);
  EXPECT_EQ(p.phase, "Failed");
  EXPECT_TRUE(p.containers.empty());
}

TEST(PodFactsTest, AListOfOneOrNone) {
  std::optional<PodFacts> p;
  std::string rv, error;
  ASSERT_TRUE(decodePodListFacts(
      std::string(R"({"kind":"PodList","metadata":{"resourceVersion":"900"},"items":[)") + kPod +
          "]}",
      p, rv, error))
      << error;
  ASSERT_TRUE(p);
  EXPECT_EQ(p->uid, "6f1c-uid");
  EXPECT_EQ(rv, "900");
  ASSERT_TRUE(
      decodePodListFacts(R"({"metadata":{"resourceVersion":"901"},"items":[]})", p, rv, error));
  EXPECT_FALSE(p);
  EXPECT_EQ(rv, "901");
}

TEST(PodFactsTest, BadBodiesNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "pod: not valid JSON"},
      {"[]", "pod: expected an object"},
      {R"({"metadata":{"uid":7}})", "metadata.uid: expected a string"},
      {R"({"spec":{"hostPID":"yes"}})", "spec.hostPID: expected a boolean"},
      {R"({"status":{"containerStatuses":{}}})", "status.containerStatuses: expected an array"},
      {R"({"status":{"containerStatuses":[{"state":{}}]}})",
       "status.containerStatuses[0].name: missing"},
      {R"({"status":{"initContainerStatuses":[{"name":"s","state":{"terminated":{"finishedAt":"yesterday"}}}]}})",
       "status.initContainerStatuses[0].state.terminated.finishedAt: not a valid time: yesterday"},
      {R"({"status":{"containerStatuses":[{"name":"s","lastState":{"terminated":{"exitCode":"1"}}}]}})",
       "status.containerStatuses[0].lastState.terminated.exitCode: expected an integer"},
      {R"({"status":{"containerStatuses":[{"name":"s","state":{"running":5}}]}})",
       "status.containerStatuses[0].state.running: expected an object"},
      {R"({"spec":{"containers":[{"name":"s","env":{}}]}})",
       "spec.containers[0].env: expected an array"},
      {R"({"spec":{"initContainers":[{"name":"s","env":[{"name":"X","value":1}]}]}})",
       "spec.initContainers[0].env[0].value: expected a string"},
  };
  for (const auto& [body, message] : cases) {
    PodFacts p;
    std::string error;
    EXPECT_FALSE(decodePodFacts(body, p, error)) << body;
    EXPECT_EQ(error, message) << body;
  }
  std::optional<PodFacts> p;
  std::string rv, error;
  EXPECT_FALSE(decodePodListFacts(R"({"items":[{"metadata":[]}]})", p, rv, error));
  EXPECT_EQ(error, "items[0].metadata: expected an object");
}

}  // namespace leasehold::kube::pod_facts_test

// --fast-failover's rule (kube/HolderExitRule.h), one row per case of docs/design.md's "Fast
// failover": what is proof that the holder's process exited, and everything that is not (a pod
// being deleted or gone, Failed, a shared process namespace, a running container, an exit the
// kubelet did not see, a status older than the term, an annotation left by another holder).
#include "kube/HolderExitRule.h"

#include <gtest/gtest.h>

#include <functional>

#include "kube/LeaseCodec.h"

namespace leasehold::kube::holder_exit_rule_test {

time::WallTime at(const char* text) {
  return *parseMicroTime(text);
}

// The Lease of holder "web-0_1" in pod web-0 (UID u-0), container leasehold, acquired at
// 10:00:05.5 and renewed at 10:00:09.5; its pod with that container terminated at 10:00:10.
election::LeaseRecord lease() {
  election::LeaseRecord r;
  r.holderIdentity = "web-0_1";
  r.holderPod = "web-0";
  r.holderProcess = "u-0/leasehold/web-0_1";
  r.acquireTime = at("2026-12-07T10:00:05.500000Z");
  r.renewTime = at("2026-12-07T10:00:09.500000Z");
  return r;
}

PodFacts exitedPod() {
  PodFacts p;
  p.name = "web-0";
  p.uid = "u-0";
  p.phase = "Running";
  ContainerFacts sidecar;
  sidecar.namesItself = true;  // LEASEHOLD_CONTAINER=leasehold in its spec, as the chart sets
  sidecar.terminated = ContainerExit{at("2026-12-07T10:00:10Z"), "Error", 137};
  p.containers["leasehold"] = sidecar;
  ContainerFacts app;
  app.running = true;
  p.containers["app"] = app;
  return p;
}

const OwnContainer kSelf{"u-1", "leasehold"};  // the follower: pod web-1

struct Row {
  const char* name;
  std::function<void(election::LeaseRecord&, std::optional<PodFacts>&, OwnContainer&)> change;
  bool proven;
  const char* why;  // a part of the verdict's sentence
};

class HolderExitRuleTest : public ::testing::TestWithParam<Row> {};

TEST_P(HolderExitRuleTest, Judges) {
  const Row& row = GetParam();
  election::LeaseRecord l = lease();
  std::optional<PodFacts> pod = exitedPod();
  OwnContainer self = kSelf;
  row.change(l, pod, self);
  const ExitVerdict v = judgeHolderExit(l, pod, self);
  EXPECT_EQ(v.proven, row.proven) << v.why;
  EXPECT_NE(v.why.find(row.why), std::string::npos) << v.why;
}

using L = election::LeaseRecord;
using P = std::optional<PodFacts>;
using S = OwnContainer;

INSTANTIATE_TEST_SUITE_P(
    Cases, HolderExitRuleTest,
    ::testing::Values(
        Row{"TerminatedAfterTheTermBegan", [](L&, P&, S&) {}, true,
            "container leasehold of pod web-0 exited at 2026-12-07T10:00:10.000000Z (Error, exit "
            "code 137)"},
        // finishedAt has whole seconds: an exit in the second of the last renewal still counts.
        Row{"TerminatedInTheSecondOfTheLastRenewal",
            [](L& l, P&, S&) { l.renewTime = at("2026-12-07T10:00:10.900000Z"); }, true,
            "exited at"},
        Row{"RestartedThenInBackOffLastStateCounts",
            [](L&, P& p, S&) {
              auto& c = p->containers["leasehold"];
              c.lastTerminated = c.terminated;
              c.terminated.reset();  // state.waiting: CrashLoopBackOff
            },
            true, "exited at"},
        Row{"ANewerInstanceExitedToo",
            [](L&, P& p, S&) {
              p->containers["leasehold"].lastTerminated =
                  ContainerExit{at("2026-12-07T10:00:01Z"), "Error", 1};
            },
            true, "exited at"},
        Row{"OwnContainerRestarted",
            [](L&, P& p, S& s) {
              s = {"u-0", "leasehold"};
              p->containers["leasehold"] = ContainerFacts{true, true, std::nullopt, std::nullopt};
            },
            true, "this replica's own container"},
        Row{"Running",
            [](L&, P& p, S&) {
              p->containers["leasehold"] = ContainerFacts{true, true, std::nullopt, std::nullopt};
            },
            false, "is running"},
        // A status not yet updated after a restart: the exit shown is the earlier instance's.
        Row{"ExitOlderThanTheTerm",
            [](L&, P& p, S&) {
              p->containers["leasehold"].terminated->finishedAt = at("2026-12-07T10:00:04Z");
            },
            false, "older than the holder's term"},
        // The second of the acquisition: rounded down, it reads as before it.
        Row{"ExitInTheSecondOfTheAcquisition",
            [](L&, P& p, S&) {
              p->containers["leasehold"].terminated->finishedAt = at("2026-12-07T10:00:05Z");
            },
            false, "older than the holder's term"},
        Row{"StatusUnknown",
            [](L&, P& p, S&) {
              p->containers["leasehold"].terminated->reason = "ContainerStatusUnknown";
            },
            false, "ContainerStatusUnknown"},
        Row{"NoTerminatedRecord",
            [](L&, P& p, S&) { p->containers["leasehold"] = ContainerFacts{true, false, std::nullopt, std::nullopt}; }, false,
            "no terminated record"},
        // The holder was told another container's name (LEASEHOLD_CONTAINER=app in the
        // sidecar): the app's exit says nothing about the holder.
        Row{"ContainerDoesNotNameItself",
            [](L&, P& p, S&) { p->containers["leasehold"].namesItself = false; }, false,
            "does not set LEASEHOLD_CONTAINER=leasehold"},
        Row{"NoFinishedAt",
            [](L&, P& p, S&) { p->containers["leasehold"].terminated->finishedAt.reset(); },
            false, "with no finishedAt"},
        Row{"NoAcquireTime", [](L& l, P&, S&) { l.acquireTime.reset(); }, false,
            "no acquireTime"},
        Row{"NoSuchContainer", [](L&, P& p, S&) { p->containers.erase("leasehold"); },
            false, "no container leasehold in pod web-0"},
        Row{"PodBeingDeleted", [](L&, P& p, S&) { p->deleting = true; }, false,
            "being deleted"},
        Row{"PodGone", [](L&, P& p, S&) { p.reset(); }, false, "a pod object gone is no proof"},
        // A forced delete, and a new pod of the same name (a StatefulSet's) took its place.
        Row{"PodReplacedUnderTheSameName", [](L&, P& p, S&) { p->uid = "u-9"; }, false,
            "not the holder's"},
        Row{"PodFailed", [](L&, P& p, S&) { p->phase = "Failed"; }, false, "is Failed"},
        Row{"SharedProcessNamespace", [](L&, P& p, S&) { p->shareProcessNamespace = true; },
            false, "shareProcessNamespace"},
        Row{"HostPid", [](L&, P& p, S&) { p->hostPid = true; }, false, "hostPID"},
        Row{"OwnContainerButSharedProcessNamespace",
            [](L&, P& p, S& s) {
              s = {"u-0", "leasehold"};
              p->shareProcessNamespace = true;
            },
            false, "shareProcessNamespace"},
        // Another container of our pod is not ours: its instance may still run.
        Row{"OwnPodOtherContainer",
            [](L& l, P& p, S& s) {
              s = {"u-0", "leasehold"};
              l.holderProcess = "u-0/app/web-0_1";
              p->containers["app"] = ContainerFacts{true, true, std::nullopt, std::nullopt};
            },
            false, "container app of pod web-0 is running"},
        Row{"NoAnnotation", [](L& l, P&, S&) { l.holderProcess.clear(); }, false,
            "did not record its pod and container"},
        // The annotations are anyone's to write: a "pod name" that would add to the query.
        Row{"NotAPodName", [](L& l, P&, S&) { l.holderPod = "web-0&labelSelector=x"; }, false,
            "is not a pod name"},
        Row{"MalformedAnnotation", [](L& l, P&, S&) { l.holderProcess = "u-0/leasehold"; },
            false, "did not record"},
        // Left by a leasehold holder on a Lease that another elector (client-go's) took since.
        Row{"AnnotationOfAnotherHolder", [](L& l, P&, S&) { l.holderIdentity = "client-go-x"; },
            false, "not the holder client-go-x"}),
    [](const ::testing::TestParamInfo<Row>& info) { return std::string(info.param.name); });

TEST(HolderProcessTest, Parses) {
  const auto p = parseHolderProcess("u-0/leasehold/web-0_1/with/slashes");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->podUid, "u-0");
  EXPECT_EQ(p->container, "leasehold");
  EXPECT_EQ(p->identity, "web-0_1/with/slashes");
  for (const char* bad : {"", "u-0", "u-0/leasehold", "/leasehold/x", "u-0//x", "u-0/c/"})
    EXPECT_FALSE(parseHolderProcess(bad)) << bad;
}

}  // namespace leasehold::kube::holder_exit_rule_test

// Lease wire format: decoding a real kube-apiserver body (in the shape of tests/apiserver/golden)
// and encoding writes that preserve everything the sidecar does not own.
#include "kube/LeaseCodec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace leasehold::kube {
namespace {

using namespace std::chrono;
using nlohmann::json;

const char* kGoldenGet =
    R"j({"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"lease-a","namespace":"golden","uid":"0b3c","resourceVersion":"213","creationTimestamp":"2026-11-30T10:00:00Z","labels":{"team":"x"},"annotations":{"leasehold.io/holder-pod":"web-0","leasehold.io/holder-address":"10.1.2.3","other":"keep"},"managedFields":[{"manager":"leasehold","operation":"Update"}]},"spec":{"holderIdentity":"node-1_1111","leaseDurationSeconds":15,"acquireTime":"2026-01-02T03:04:05.123456Z","renewTime":"2026-01-02T03:04:09.000001Z","leaseTransitions":4,"futureField":true}})j";

// kGoldenGet decoded; the tests below fail if it does not decode.
election::LeaseRecord golden() {
  election::LeaseRecord r;
  std::string error;
  EXPECT_TRUE(decodeLease(kGoldenGet, r, error)) << error;
  return r;
}

TEST(LeaseCodecTest, DecodesAGoldenLease) {
  const election::LeaseRecord r = golden();
  EXPECT_EQ(r.holderIdentity, "node-1_1111");
  EXPECT_EQ(r.leaseDurationSeconds, 15);
  EXPECT_EQ(r.leaseTransitions, 4);
  EXPECT_EQ(r.resourceVersion.value, "213");
  EXPECT_EQ(r.holderPod, "web-0");
  EXPECT_EQ(r.holderAddress, "10.1.2.3");
  EXPECT_EQ(time::formatMicroTime(*r.acquireTime), "2026-01-02T03:04:05.123456Z");
  EXPECT_EQ(time::formatMicroTime(*r.renewTime), "2026-01-02T03:04:09.000001Z");
}

TEST(LeaseCodecTest, WritePreservesUnownedFieldsAndSetsTheCasCondition) {
  election::LeaseRecord r = golden();
  r.holderIdentity = "web-1_abc";
  r.leaseTransitions = 5;
  r.renewTime = parseMicroTime("2026-11-30T10:00:01.5Z");
  const json body = json::parse(encodeLease(r, {"lease-a", "golden", "web-1", "10.0.0.9"}, false));
  EXPECT_EQ(body.at("metadata").at("resourceVersion"), "213");
  EXPECT_EQ(body.at("metadata").at("uid"), "0b3c");
  EXPECT_EQ(body.at("metadata").at("labels").at("team"), "x");
  EXPECT_EQ(body.at("metadata").at("annotations").at("other"), "keep");
  EXPECT_EQ(body.at("metadata").at("annotations").at("leasehold.io/holder-pod"), "web-1");
  EXPECT_EQ(body.at("metadata").at("annotations").at("leasehold.io/holder-address"), "10.0.0.9");
  EXPECT_EQ(body.at("spec").at("futureField"), true);
  EXPECT_EQ(body.at("spec").at("holderIdentity"), "web-1_abc");
  EXPECT_EQ(body.at("spec").at("leaseTransitions"), 5);
  EXPECT_EQ(body.at("spec").at("renewTime"), "2026-11-30T10:00:01.500000Z");
  EXPECT_EQ(body.at("spec").at("acquireTime"), "2026-01-02T03:04:05.123456Z");
  EXPECT_EQ(body.at("kind"), "Lease");
}

TEST(LeaseCodecTest, ReleaseDropsHolderAnnotationsAndCreateHasNoResourceVersion) {
  election::LeaseRecord r = golden();
  r.holderIdentity.clear();
  const json released = json::parse(encodeLease(r, {"lease-a", "golden", "web-0", ""}, false));
  EXPECT_EQ(released.at("spec").at("holderIdentity"), "");
  EXPECT_FALSE(released.at("metadata").at("annotations").contains("leasehold.io/holder-pod"));
  EXPECT_EQ(released.at("metadata").at("annotations").at("other"), "keep");

  election::LeaseRecord fresh;
  fresh.holderIdentity = "a";
  fresh.leaseDurationSeconds = 15;
  const json created = json::parse(encodeLease(fresh, {"my-app", "ns", "", ""}, true));
  EXPECT_FALSE(created.at("metadata").contains("resourceVersion"));
  EXPECT_EQ(created.at("metadata").at("name"), "my-app");
  EXPECT_EQ(created.at("metadata").at("namespace"), "ns");
  EXPECT_EQ(created.at("apiVersion"), "coordination.k8s.io/v1");
}

// --fast-failover's leasehold.io/holder-process: written by a holder that knows its pod UID and
// container (with its identity), read back, and removed by a write that does not set it (a
// holder without the flag, a release), so that it never names a process that no longer holds.
TEST(LeaseCodecTest, HolderProcessFollowsTheHolder) {
  election::LeaseRecord r = golden();
  r.holderIdentity = "web-1_abc";
  LeaseTarget target{"lease-a", "golden", "web-1", "10.0.0.9"};
  target.podUid = "u-1";
  target.container = "leasehold";
  const std::string written = encodeLease(r, target, false);
  const json body = json::parse(written);
  EXPECT_EQ(body.at("metadata").at("annotations").at("leasehold.io/holder-process"),
            "u-1/leasehold/web-1_abc");
  election::LeaseRecord read;
  std::string error;
  ASSERT_TRUE(decodeLease(written, read, error)) << error;
  EXPECT_EQ(read.holderProcess, "u-1/leasehold/web-1_abc");

  read.holderIdentity = "web-2_def";  // taken over by a replica without --fast-failover
  const json other = json::parse(encodeLease(read, {"lease-a", "golden", "web-2", ""}, false));
  EXPECT_FALSE(other.at("metadata").at("annotations").contains("leasehold.io/holder-process"));
  EXPECT_EQ(other.at("metadata").at("annotations").at("other"), "keep");

  read.holderIdentity.clear();  // released by the holder itself
  const json released = json::parse(encodeLease(read, target, false));
  EXPECT_FALSE(released.at("metadata").at("annotations").contains("leasehold.io/holder-process"));
}

// A pod watch's events keep the object as JSON text for its owner to decode.
TEST(LeaseCodecTest, WatchEventsOfOtherObjectsKeepTheirJson) {
  WatchEvent e;
  std::string error;
  ASSERT_TRUE(decodeWatchEvent(
      R"j({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"web-0","resourceVersion":"9"},"spec":{"containers":[]}}})j",
      e, error, WatchObjects::kOther))
      << error;
  EXPECT_EQ(e.type, WatchEvent::Type::kModified);
  EXPECT_EQ(e.name, "web-0");
  EXPECT_EQ(e.resourceVersion, "9");
  EXPECT_FALSE(e.lease);
  EXPECT_EQ(json::parse(e.object).at("kind"), "Pod");
}

// A handover request: the annotation everywhere, spec.preferredHolder where the server keeps it
// (it wins); a write with the request cleared removes both and keeps spec.strategy.
TEST(LeaseCodecTest, HandoverRequestsAreReadFromSpecOrAnnotationAndClearedFromBoth) {
  election::LeaseRecord r;
  std::string error;
  ASSERT_TRUE(decodeLease(
      R"j({"metadata":{"resourceVersion":"9","annotations":{"leasehold.io/preferred-holder":"web-2"}},"spec":{"holderIdentity":"a"}})j",
      r, error))
      << error;
  EXPECT_EQ(r.preferredHolder, "web-2");
  ASSERT_TRUE(decodeLease(
      R"j({"metadata":{"resourceVersion":"9","annotations":{"leasehold.io/preferred-holder":"web-2","other":"keep"}},"spec":{"holderIdentity":"a","strategy":"OldestEmulationVersion","preferredHolder":"b"}})j",
      r, error))
      << error;
  EXPECT_EQ(r.preferredHolder, "b");

  const json kept = json::parse(encodeLease(r, {"l", "ns", "", ""}, false));
  EXPECT_EQ(kept.at("spec").at("preferredHolder"), "b");
  EXPECT_EQ(kept.at("metadata").at("annotations").at("leasehold.io/preferred-holder"), "web-2");

  r.preferredHolder.clear();
  const json cleared = json::parse(encodeLease(r, {"l", "ns", "", ""}, false));
  EXPECT_FALSE(cleared.at("spec").contains("preferredHolder"));
  EXPECT_EQ(cleared.at("spec").at("strategy"), "OldestEmulationVersion");
  EXPECT_FALSE(cleared.at("metadata").at("annotations").contains("leasehold.io/preferred-holder"));
  EXPECT_EQ(cleared.at("metadata").at("annotations").at("other"), "keep");

  ASSERT_TRUE(decodeLease(R"j({"spec":{"holderIdentity":"a"}})j", r, error));
  EXPECT_EQ(r.preferredHolder, "");
  EXPECT_FALSE(decodeLease(R"j({"spec":{"preferredHolder":3}})j", r, error));
  EXPECT_NE(error.find("spec.preferredHolder"), std::string::npos) << error;
}

struct TimeCase {
  const char* in;
  const char* out;  // nullptr: rejected
};

class MicroTimeTest : public ::testing::TestWithParam<TimeCase> {};

TEST_P(MicroTimeTest, Parses) {
  const auto t = parseMicroTime(GetParam().in);
  if (!GetParam().out) {
    EXPECT_FALSE(t) << GetParam().in;
    return;
  }
  ASSERT_TRUE(t) << GetParam().in;
  EXPECT_EQ(time::formatMicroTime(*t), GetParam().out);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MicroTimeTest,
    ::testing::Values(TimeCase{"2026-11-30T10:05:02.123456Z", "2026-11-30T10:05:02.123456Z"},
                      TimeCase{"2026-01-02T03:04:05.123456+02:00", "2026-01-02T01:04:05.123456Z"},
                      TimeCase{"2026-01-02T03:04:05Z", "2026-01-02T03:04:05.000000Z"},
                      TimeCase{"2026-01-02T03:04:05.123456789Z", "2026-01-02T03:04:05.123456Z"},
                      TimeCase{"2026-01-02T03:04:05.123456", nullptr},
                      TimeCase{"yesterday", nullptr}, TimeCase{"2026-02-30T03:04:05Z", nullptr},
                      TimeCase{"2026-01-02T03:04:05.Z", nullptr},
                      TimeCase{"2026-01-02T03:04:05.1Zjunk", nullptr}, TimeCase{"", nullptr}));

TEST(LeaseCodecTest, ListTakesTheListResourceVersionAndTheNamedItem) {
  const char* body =
      R"j({"kind":"LeaseList","apiVersion":"coordination.k8s.io/v1","metadata":{"resourceVersion":"300"},"items":[{"metadata":{"name":"other","resourceVersion":"7"},"spec":{}},{"metadata":{"name":"lease-a","resourceVersion":"213"},"spec":{"holderIdentity":"x","leaseTransitions":2}}]})j";
  LeaseListResult list;
  std::string error;
  ASSERT_TRUE(decodeLeaseList(body, "lease-a", list, error)) << error;
  EXPECT_EQ(list.resourceVersion, "300");
  ASSERT_TRUE(list.item);
  EXPECT_EQ(list.item->holderIdentity, "x");
  EXPECT_EQ(list.item->resourceVersion.value, "213");
  ASSERT_TRUE(decodeLeaseList(R"j({"metadata":{"resourceVersion":"9"},"items":[]})j", "lease-a",
                              list, error));
  EXPECT_FALSE(list.item);
}

TEST(LeaseCodecTest, WatchEvents) {
  WatchEvent e;
  std::string error;
  ASSERT_TRUE(decodeWatchEvent(
      R"j({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 213 (221)","reason":"Expired","code":410}})j",
      e, error));
  EXPECT_EQ(e.type, WatchEvent::Type::kError);
  EXPECT_EQ(e.status->code, 410);
  EXPECT_EQ(e.status->reason, "Expired");

  ASSERT_TRUE(decodeWatchEvent(
      R"j({"type":"BOOKMARK","object":{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"resourceVersion":"555","creationTimestamp":null},"spec":{}}})j",
      e, error));
  EXPECT_EQ(e.type, WatchEvent::Type::kBookmark);
  EXPECT_EQ(e.resourceVersion, "555");
  EXPECT_FALSE(e.lease);

  ASSERT_TRUE(decodeWatchEvent(std::string(R"j({"type":"DELETED","object":)j") + kGoldenGet + "}",
                               e, error));
  EXPECT_EQ(e.type, WatchEvent::Type::kDeleted);
  EXPECT_EQ(e.lease->holderIdentity, "node-1_1111");
}

struct BadCase {
  const char* body;
  const char* messagePart;
};

class MalformedLeaseTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(MalformedLeaseTest, IsRejectedWithTheFieldPath) {
  election::LeaseRecord r;
  std::string error;
  EXPECT_FALSE(decodeLease(GetParam().body, r, error));
  EXPECT_NE(error.find(GetParam().messagePart), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedLeaseTest,
    ::testing::Values(BadCase{R"j({"spec":{"leaseDurationSeconds":"15"}})j",
                              "spec.leaseDurationSeconds: expected an integer"},
                      BadCase{R"j({"spec":{"renewTime":"soon"}})j", "spec.renewTime"},
                      BadCase{R"j({"spec":{"holderIdentity":7}})j", "spec.holderIdentity"},
                      BadCase{R"j({"spec":{"leaseTransitions":99999999999}})j", "int32"},
                      BadCase{R"j({"metadata":[]})j", "metadata"}, BadCase{R"j([1,2])j", "lease"},
                      BadCase{R"j({"spec":)j", "not valid JSON"}));

TEST(LeaseCodecTest, StatusBodies) {
  ApiStatus s;
  EXPECT_TRUE(decodeStatus(
      R"j({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"m","reason":"Conflict","details":{"name":"lease-a","group":"coordination.k8s.io","kind":"leases"},"code":409})j",
      s));
  EXPECT_EQ(s.code, 409);
  EXPECT_EQ(s.reason, "Conflict");
  EXPECT_FALSE(decodeStatus("Too many requests, please try again later.", s));
  EXPECT_FALSE(decodeStatus(R"j({"kind":"Lease"})j", s));
}

}  // namespace
}  // namespace leasehold::kube

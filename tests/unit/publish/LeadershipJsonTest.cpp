#include "publish/LeadershipJson.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "etcd/ElectionLockName.h"
#include "kube/LeaseLockName.h"

namespace leasehold::publish {
namespace {

using election::Leadership;
using time::WallTime;
using namespace std::chrono_literals;

WallTime at(std::int64_t micros) {
  return WallTime(std::chrono::microseconds(micros));
}

Leadership leaderState() {
  Leadership l;
  l.leader = true;
  l.identity = "web-0_3f9a1c2b";
  l.holder = "web-0_3f9a1c2b";
  l.holderPod = "web-0";
  l.holderAddress = "10.1.2.3";
  l.fencingToken = 34;
  l.acquireTime = at(1'000'000);
  l.renewTime = at(2'123'456);
  l.validUntil = at(12'123'456);
  return l;
}

TEST(LeadershipJsonTest, LeaderHasEveryFieldOfTheContractInOrder) {
  const std::string text = leadershipJson(leaderState(), kube::leaseLockName("default", "my-app"));
  EXPECT_EQ(text, R"({"leader":true,"identity":"web-0_3f9a1c2b","holder":"web-0_3f9a1c2b",)"
                  R"("name":"web-0","holderAddress":"10.1.2.3","fencingToken":34,)"
                  R"("namespace":"default","lease":"my-app",)"
                  R"("acquireTime":"1970-01-01T00:00:01.000000Z",)"
                  R"("renewTime":"1970-01-01T00:00:02.123456Z",)"
                  R"("validUntil":"1970-01-01T00:00:12.123456Z"})");
  EXPECT_TRUE(nlohmann::json::accept(text));
}

// The lock's scope field is its store's word: on etcd "store" takes the namespace's place.
TEST(LeadershipJsonTest, OnEtcdTheStoreStandsWhereTheNamespaceWould) {
  const std::string text = leadershipJson(leaderState(), etcd::electionLockName("jobs/scheduler"));
  EXPECT_NE(text.find(R"("fencingToken":34,"store":"etcd","lease":"jobs/scheduler",)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("namespace"), std::string::npos) << text;
}

TEST(LeadershipJsonTest, FollowerHasNoValidUntilEvenIfOneIsSet) {
  Leadership l = leaderState();
  l.leader = false;
  l.identity = "web-1_00000000";
  const auto j = nlohmann::json::parse(leadershipJson(l, kube::leaseLockName("default", "my-app")));
  EXPECT_FALSE(j["leader"].get<bool>());
  EXPECT_FALSE(j.contains("validUntil"));
  EXPECT_EQ(j["holder"], "web-0_3f9a1c2b");
  EXPECT_EQ(j["identity"], "web-1_00000000");
}

TEST(LeadershipJsonTest, BeforeAnyLeaseTheTokenIsNullAndNameFallsBackToTheHolder) {
  Leadership l;
  l.identity = "me";
  auto j = nlohmann::json::parse(leadershipJson(l, kube::leaseLockName("ns", "lease")));
  EXPECT_TRUE(j["fencingToken"].is_null());
  EXPECT_EQ(j["holder"], "");
  EXPECT_EQ(j["name"], "");
  EXPECT_FALSE(j.contains("holderAddress"));
  EXPECT_FALSE(j.contains("acquireTime"));
  EXPECT_FALSE(j.contains("renewTime"));

  l.holder = "other_12345678";  // a holder without the pod annotation (client-go, say)
  j = nlohmann::json::parse(leadershipJson(l, kube::leaseLockName("ns", "lease")));
  EXPECT_EQ(j["name"], "other_12345678");
}

// Apps written for contrib's leader-elector lead while name is their own pod: this replica's
// name must vanish the moment its claim does, not when another replica takes over.
TEST(LeadershipJsonTest, NameNeverNamesThisReplicaWhileItDoesNotLead) {
  Leadership l = leaderState();
  EXPECT_EQ(nlohmann::json::parse(leadershipJson(l, kube::leaseLockName("ns", "lease")))["name"],
            "web-0");
  l.leader = false;  // renew deadline passed, or stopping: the Lease still names us
  auto j = nlohmann::json::parse(leadershipJson(l, kube::leaseLockName("ns", "lease")));
  EXPECT_EQ(j["name"], "");
  EXPECT_EQ(j["holder"], "web-0_3f9a1c2b") << "holder still says what the Lease says";
  l.identity = "web-0_99999999";  // a restarted sidecar: the old holder is someone else
  EXPECT_EQ(nlohmann::json::parse(leadershipJson(l, kube::leaseLockName("ns", "lease")))["name"],
            "web-0");
}

TEST(LeadershipJsonTest, ProblemOnlyWhileTheStoreRefusesThisReplica) {
  Leadership l;
  l.identity = "me";
  EXPECT_FALSE(nlohmann::json::parse(leadershipJson(l, kube::leaseLockName("ns", "lease")))
                   .contains("problem"));
  l.problem = "403 Forbidden: cannot get resource \"leases\" (grant get)";
  const auto j = nlohmann::json::parse(leadershipJson(l, kube::leaseLockName("ns", "lease")));
  EXPECT_EQ(j["problem"], l.problem);
  EXPECT_FALSE(j["leader"].get<bool>());
}

TEST(LeadershipJsonTest, StringsAreEscapedSoTheOutputIsAlwaysJson) {
  Leadership l;
  l.identity = "quote\" backslash\\ newline\n tab\t nul";
  l.identity.push_back('\0');
  l.holder = "\x01\x1f";
  const std::string text = leadershipJson(l, kube::leaseLockName("n\"s", "le\\ase"));
  ASSERT_TRUE(nlohmann::json::accept(text)) << text;
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["identity"].get<std::string>(), l.identity);
  EXPECT_EQ(j["holder"].get<std::string>(), l.holder);
  EXPECT_EQ(j["namespace"], "n\"s");
  EXPECT_EQ(text.find('\n'), std::string::npos) << "one line, so SSE data needs one data: line";
}

}  // namespace
}  // namespace leasehold::publish

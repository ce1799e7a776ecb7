// shard::ShardMode on FakeApiClient and FakeClock, two shards: a cold start waits P then creates
// both shard Leases (labelled with the group) and sends no GET; a second member's membership
// Lease in the watch makes it drop one shard at once (gone from /shards) and release it, after
// --shard-drain when one is set; in run mode (leasehold run --shards) the dropped shard's
// command is stopped first and the release waits for it. Every request is scripted: any other
// fails the test.
#include "shard/ShardMode.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "FakeApiClient.h"
#include "FakeClock.h"
#include "kube/LeaseShardGroup.h"
#include "shard/ShardAssignment.h"

namespace leasehold::testing_support {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr const char* kCollection = "/apis/coordination.k8s.io/v1/namespaces/ns/leases";

json lease(const std::string& name, const std::string& holder, const std::string& rv) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"resourceVersion", rv},
            {"labels", {{"leasehold.io/shard-group", "work"}}}}},
          {"spec",
           {{"holderIdentity", holder},
            {"leaseDurationSeconds", 15},
            {"acquireTime", "2026-11-30T10:00:00.000000Z"},
            {"renewTime", "2026-11-30T10:00:00.000000Z"},
            {"leaseTransitions", 0}}}};
}

// The object a write sent, as the server answers it: the same with a new resourceVersion.
json stored(const std::shared_ptr<FakeApiClient::Call>& call, const std::string& rv) {
  json o = json::parse(call->request().body);
  o["metadata"]["resourceVersion"] = rv;
  return o;
}

std::string event(const char* type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump();
}

class ShardModeTest : public ::testing::Test {
 protected:
  void make(time::Duration drain, bool runMode = false) {
    shard::ShardModeConfig c;
    c.identity = "me";
    c.group = "work";
    c.drain = drain;
    if (runMode) {
      for (int i = 0; i < 2; i++)
        c.commands.push_back(commandPort(i));
    }
    kube::LeaseShardGroupConfig g;
    g.identity = "me";
    g.ns = "ns";
    g.group = "work";
    g.shards = 2;
    mode = std::make_unique<shard::ShardMode>(
        clock, c,
        std::make_unique<kube::LeaseShardGroup>(clock, g, api, logger, [] { return 0.5; }), metrics,
        logger);
  }
  ~ShardModeTest() override { mode.reset(); }  // before the fake checks what is unmet

  std::vector<int> owned() const {
    std::vector<int> out;
    const json shards = json::parse(mode->json());
    for (const auto& o : shards["owned"])
      out.push_back(o["shard"].get<int>());
    return out;
  }

  // Start alone on an empty group: membership written, list, watch; both shards created
  // once P has passed; returns the watch.
  std::shared_ptr<FakeApiClient::Stream> startAloneAndOwnBoth() {
    auto member = api.expect("POST", kCollection).body(HasSubstr("work-member-")).hold();
    api.expect("GET", kCollection)
        .query("labelSelector=leasehold.io%2Fshard-group%3Dwork")
        .verb("list")
        .respond(200,
                 json{{"metadata", {{"resourceVersion", "10"}}}, {"items", json::array()}}.dump());
    auto watch = api.expect("GET", kCollection).query(HasSubstr("watch=true")).stream();
    mode->start();
    clock.runDue();
    member->reply(201, stored(member, "11").dump());
    watch->open();
    clock.runDue();
    EXPECT_EQ(owned(), std::vector<int>{});
    auto create0 = api.expect("POST", kCollection).body(HasSubstr("\"name\":\"work-0\"")).hold();
    auto create1 = api.expect("POST", kCollection).body(HasSubstr("\"name\":\"work-1\"")).hold();
    clock.advance(1999ms);
    EXPECT_FALSE(create0->made()) << "a cold start waits P before acquiring";
    clock.advance(1ms);
    EXPECT_TRUE(create0->made() && create1->made());
    EXPECT_THAT(create0->request().body, HasSubstr("\"leasehold.io/shard-group\":\"work\""));
    create0->reply(201, stored(create0, "12").dump());
    create1->reply(201, stored(create1, "13").dump());
    clock.runDue();
    watch->send(event("ADDED", stored(create0, "12")));
    watch->send(event("ADDED", stored(create1, "13")));
    clock.runDue();
    EXPECT_EQ(owned(), (std::vector<int>{0, 1})) << mode->json();
    return watch;
  }

  // Which of the two shards "me" keeps when "b" joins.
  int kept() const {
    const auto target = shard::ShardAssignment::assign({"me", "me"}, {"me", "b"});
    return target[0] == "me" ? 0 : 1;
  }

  // Run mode's per-shard command port: every call recorded ("leading 0 token=0", "lost 1",
  // "stop-for-release 1"); the readiness callbacks are kept for the test to run.
  lock::CommandPort commandPort(int i) {
    const std::string n = std::to_string(i);
    return {[this, n](std::int64_t token, time::MonoTime) {
              commandCalls.push_back("leading " + n + " token=" + std::to_string(token));
            },
            [this, n] { commandCalls.push_back("lost " + n); },
            [this, n, i](std::function<void()> ready) {
              commandCalls.push_back("stop-for-release " + n);
              releaseReady[i] = std::move(ready);
            },
            [this, n](std::function<void()> ready) {
              commandCalls.push_back("stop-for-shutdown " + n);
              ready();
            }};
  }

  std::vector<std::string> commandCalls;
  std::function<void()> releaseReady[2];
  time::FakeClock clock;
  FakeApiClient api{clock};
  publish::Metrics metrics;
  log::Logger logger{log::Format::kText, log::Level::kError};
  std::unique_ptr<shard::ShardMode> mode;
};

TEST_F(ShardModeTest, AJoiningMemberGetsOneShardWhichIsDroppedAtOnceAndReleased) {
  make(0s);
  auto watch = startAloneAndOwnBoth();
  const int give = 1 - kept();
  const std::string path = std::string(kCollection) + "/work-" + std::to_string(give);
  auto release = api.expect("PUT", path).body(HasSubstr("\"holderIdentity\":\"\"")).hold();
  watch->send(event("ADDED", lease(kube::GroupLayout{"work", 2}.memberLease("b"), "b", "20")));
  clock.runDue();
  EXPECT_EQ(owned(), std::vector<int>{kept()});
  EXPECT_EQ(json::parse(mode->json())["members"], 2);
  ASSERT_TRUE(release->made());
  // After the release the Elector reads the Lease once; then it follows without requests.
  api.expect("GET", path).respond(200, stored(release, "21").dump());
  release->reply(200, stored(release, "21").dump());
  clock.runDue();
  EXPECT_EQ(owned(), std::vector<int>{kept()});
}

TEST_F(ShardModeTest, WithADrainTheShardLeavesAtOnceButIsReleasedOnlyAfterIt) {
  make(1s);
  auto watch = startAloneAndOwnBoth();
  const int give = 1 - kept();
  const std::string path = std::string(kCollection) + "/work-" + std::to_string(give);
  watch->send(event("ADDED", lease(kube::GroupLayout{"work", 2}.memberLease("b"), "b", "20")));
  clock.runDue();
  EXPECT_EQ(owned(), std::vector<int>{kept()}) << "dropped at once";
  const auto asked = api.requests().size();
  clock.advance(999ms);
  EXPECT_EQ(api.requests().size(), asked) << "released before the drain ended";
  auto release = api.expect("PUT", path).body(HasSubstr("\"holderIdentity\":\"\"")).hold();
  clock.advance(1ms);
  ASSERT_TRUE(release->made());
  api.expect("GET", path).respond(200, stored(release, "21").dump());
  release->reply(200, stored(release, "21").dump());
  clock.runDue();
}

TEST_F(ShardModeTest, RunModeStopsTheMovedShardsCommandBeforeReleasingIt) {
  make(0s, true);
  auto watch = startAloneAndOwnBoth();
  EXPECT_EQ(commandCalls, (std::vector<std::string>{"leading 0 token=0", "leading 1 token=0"}));
  commandCalls.clear();
  const int give = 1 - kept();
  const std::string path = std::string(kCollection) + "/work-" + std::to_string(give);
  watch->send(event("ADDED", lease(kube::GroupLayout{"work", 2}.memberLease("b"), "b", "20")));
  clock.runDue();
  EXPECT_EQ(commandCalls, std::vector<std::string>{"stop-for-release " + std::to_string(give)});
  EXPECT_EQ(owned(), std::vector<int>{kept()}) << "dropped at once, while its command stops";
  const auto asked = api.requests().size();
  clock.runDue();
  EXPECT_EQ(api.requests().size(), asked) << "released before the command was gone";
  EXPECT_EQ(owned(), std::vector<int>{kept()}) << "claimed again while its command stops";
  // The command's group is gone: now the release, then the Elector's one GET.
  auto release = api.expect("PUT", path).body(HasSubstr("\"holderIdentity\":\"\"")).hold();
  ASSERT_TRUE(releaseReady[give]);
  releaseReady[give]();
  clock.runDue();
  ASSERT_TRUE(release->made());
  api.expect("GET", path).respond(200, stored(release, "21").dump());
  release->reply(200, stored(release, "21").dump());
  clock.runDue();
  EXPECT_EQ(owned(), std::vector<int>{kept()});
  EXPECT_EQ(commandCalls, (std::vector<std::string>{"stop-for-release " + std::to_string(give),
                                                    "lost " + std::to_string(give)}));
}

TEST_F(ShardModeTest, MetricsCountWhatIsOwned) {
  make(0s);
  auto watch = startAloneAndOwnBoth();
  const auto text = mode->metricsText();
  EXPECT_THAT(text, HasSubstr("leasehold_shards_owned 2\n"));
  EXPECT_THAT(text, HasSubstr("leasehold_shard_members 1\n"));
  EXPECT_THAT(text, HasSubstr("leasehold_shard_fencing_token{shard=\"1\"} 0\n"));
}

}  // namespace
}  // namespace leasehold::testing_support

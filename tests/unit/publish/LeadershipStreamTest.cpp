#include "publish/LeadershipStream.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "FakeClock.h"
#include "MemoryLeaseStore.h"
#include "election/lease/Elector.h"
#include "kube/LeaseLockName.h"

namespace leasehold::publish {
namespace {

using election::Leadership;
using time::Duration;
using time::FakeClock;
using time::MonoTime;
using namespace std::chrono_literals;

// An event-stream client as the application sees it. Like the real one, it runs its onClose
// callback later (here: when the test says so), never inside send() or close().
class FakeClient : public net::EventStream {
 public:
  bool send(std::string_view data) override {
    if (closed_) return false;
    if (refuse_) {  // its buffer is full: the server drops it
      closed_ = true;
      return false;
    }
    events.emplace_back(data);
    return true;
  }
  bool comment(std::string_view text) override {
    if (closed_) return false;
    comments.emplace_back(text);
    return true;
  }
  bool closed() const override { return closed_; }
  void close() override { closed_ = true; }
  void onClose(std::function<void()> callback) override { onClose_ = std::move(callback); }

  void refuseFromNowOn() { refuse_ = true; }
  void goAway() {
    closed_ = true;
    if (auto cb = std::move(onClose_)) cb();
  }
  nlohmann::json last() const { return nlohmann::json::parse(events.back()); }

  std::vector<std::string> events;
  std::vector<std::string> comments;

 private:
  bool closed_ = false;
  bool refuse_ = false;
  std::function<void()> onClose_;
};

class LeadershipStreamTest : public ::testing::Test {
 protected:
  LeadershipStreamTest() {
    state.identity = "me";
    state.holder = "other";
    state.fencingToken = 4;
  }
  std::shared_ptr<FakeClient> connect() {
    auto c = std::make_shared<FakeClient>();
    stream.add(c);
    return c;
  }
  void becomeLeaderUntil(MonoTime until) {
    state.leader = true;
    state.holder = "me";
    state.fencingToken = 5;
    state.validUntilMono = until;
  }

  FakeClock clock;
  Leadership state;
  // Computed when asked, like Elector::leadership(): leader only while now < validUntilMono.
  LeadershipStream stream{clock, kube::leaseLockName("default", "demo"), [this] {
                            Leadership l = state;
                            if (l.leader && l.validUntilMono && clock.now() >= *l.validUntilMono) {
                              l.leader = false;
                              l.validUntilMono.reset();
                            }
                            return l;
                          }};
};

TEST_F(LeadershipStreamTest, ANewClientGetsTheCurrentStateAtOnce) {
  auto c = connect();
  ASSERT_EQ(c->events.size(), 1u);
  EXPECT_EQ(c->last()["holder"], "other");
  EXPECT_EQ(c->last()["fencingToken"], 4);
  EXPECT_FALSE(c->last()["leader"].get<bool>());
  EXPECT_EQ(stream.clientCount(), 1u);
}

TEST_F(LeadershipStreamTest, RenewalsAreNotEventsButEveryVisibleChangeIs) {
  auto c = connect();
  stream.update();
  EXPECT_EQ(c->events.size(), 1u) << "nothing changed";

  state.renewTime = clock.wallNow();
  state.validUntil = clock.wallNow() + 10s;
  stream.update();
  EXPECT_EQ(c->events.size(), 1u) << "a renewal only moves renewTime/validUntil";

  state.holder = "third";
  stream.update();
  ASSERT_EQ(c->events.size(), 2u);
  EXPECT_EQ(c->last()["holder"], "third");

  state.fencingToken = 6;
  stream.update();
  ASSERT_EQ(c->events.size(), 3u);

  state.holderAddress = "10.0.0.7";
  stream.update();
  ASSERT_EQ(c->events.size(), 4u);

  state.acquireTime = clock.wallNow();
  stream.update();
  ASSERT_EQ(c->events.size(), 5u);

  becomeLeaderUntil(clock.now() + 10s);
  stream.update();
  ASSERT_EQ(c->events.size(), 6u);
  EXPECT_TRUE(c->last()["leader"].get<bool>());
}

TEST_F(LeadershipStreamTest, TheClaimRunningOutIsPublishedByTimerWithoutAnyUpdateCall) {
  auto c = connect();
  const MonoTime until = clock.now() + 10s;
  becomeLeaderUntil(until);
  stream.update();
  ASSERT_EQ(c->events.size(), 2u);
  ASSERT_TRUE(c->last()["leader"].get<bool>());

  clock.advance(10s - 1ms);
  EXPECT_EQ(c->events.size(), 2u) << "still leader just before the deadline";
  clock.advance(1ms);
  ASSERT_EQ(c->events.size(), 3u) << "published at the deadline itself";
  EXPECT_FALSE(c->last()["leader"].get<bool>());
  EXPECT_FALSE(c->last().contains("validUntil"));
  stream.update();  // the elector's own kSteppedDown arriving as well: no duplicate
  EXPECT_EQ(c->events.size(), 3u);
}

TEST_F(LeadershipStreamTest, ARenewalMovesTheExpiryTimer) {
  auto c = connect();
  becomeLeaderUntil(clock.now() + 10s);
  stream.update();
  clock.advance(5s);
  state.validUntilMono = clock.now() + 10s;  // renewed
  stream.update();
  clock.advance(9s);
  EXPECT_TRUE(c->last()["leader"].get<bool>()) << "the old deadline passed, the new one not";
  EXPECT_EQ(c->events.size(), 2u);
  clock.advance(1s);
  EXPECT_FALSE(c->last()["leader"].get<bool>());
}

TEST_F(LeadershipStreamTest, KeepAliveCommentEvery15Seconds) {
  auto c = connect();
  clock.advance(15s - 1ms);
  EXPECT_TRUE(c->comments.empty());
  clock.advance(1ms);
  ASSERT_EQ(c->comments.size(), 1u);
  EXPECT_EQ(c->comments[0], "keep-alive");
  clock.advance(30s);
  EXPECT_EQ(c->comments.size(), 3u);
  EXPECT_EQ(c->events.size(), 1u) << "keep-alives are comments, not events";
}

TEST_F(LeadershipStreamTest, NoTimerRunsWhileNobodyListens) {
  auto c = connect();
  c->goAway();
  EXPECT_EQ(stream.clientCount(), 0u);
  EXPECT_EQ(clock.armedTimers(), 0u);
}

// Two ways a client leaves: its buffer fills up (the stream drops it on its next send), or it
// goes away (the stream forgets it at once). Either way the others still get everything.
struct LeavingCase {
  const char* name;
  void (*leave)(FakeClient&);
  bool goneAtOnce;  // before the next change is published
};

void PrintTo(const LeavingCase& c, std::ostream* os) {
  *os << c.name;
}

class LeavingClientTest : public LeadershipStreamTest,
                          public ::testing::WithParamInterface<LeavingCase> {};

TEST_P(LeavingClientTest, IsForgottenAndTheOthersStillGetEverything) {
  auto leaving = connect();
  auto staying = connect();
  GetParam().leave(*leaving);
  EXPECT_EQ(stream.clientCount(), GetParam().goneAtOnce ? 1u : 2u);
  state.holder = "new";
  stream.update();
  EXPECT_EQ(stream.clientCount(), 1u);
  EXPECT_EQ(staying->events.size(), 2u);
  state.holder = "newer";
  stream.update();
  EXPECT_EQ(staying->events.size(), 3u);
  EXPECT_EQ(leaving->events.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Table, LeavingClientTest,
                         ::testing::Values(LeavingCase{"a_slow_client_is_dropped",
                                                       [](FakeClient& c) { c.refuseFromNowOn(); },
                                                       false},
                                           LeavingCase{"a_client_that_goes_away",
                                                       [](FakeClient& c) { c.goAway(); }, true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(LeadershipStreamTest, ALateClientStartsFromTheSameStateAsTheOthers) {
  auto a = connect();
  state.holder = "changed-without-update";
  auto b = connect();  // joining publishes the pending change to a first
  EXPECT_EQ(a->events.size(), 2u);
  EXPECT_EQ(a->last()["holder"], "changed-without-update");
  ASSERT_EQ(b->events.size(), 1u);
  EXPECT_EQ(b->last()["holder"], "changed-without-update");
}

TEST_F(LeadershipStreamTest, CloseAllClosesEveryClient) {
  auto a = connect();
  auto b = connect();
  stream.closeAll();
  EXPECT_TRUE(a->closed());
  EXPECT_TRUE(b->closed());
  EXPECT_EQ(stream.clientCount(), 0u);
}

// The real elector on the in-memory Lease: the stream sees the acquisition, nothing for the
// renewals, and leader=false when a partition lets the renew deadline pass with no API event.
TEST(LeadershipStreamWithElectorTest, AcquisitionRenewalsAndTimerDrivenStepDown) {
  FakeClock clock;
  election::MemoryLeaseBackend backend;
  election::MemoryLeaseStore store(backend, clock);
  store.setRequestTimeout(1s);
  election::ElectorConfig config{election::Identity{"me"},
                                 election::ElectionTimings{15s, 10s, 2s, 1.2},
                                 election::FollowerMode::kWatch};
  election::Elector elector(clock, store, config, [] { return 0.5; });
  LeadershipStream stream(clock, kube::leaseLockName("default", "demo"),
                          [&] { return elector.leadership(); });
  int electorEvents = 0;
  elector.setEventHandler([&](const election::ElectorEvent&) {
    electorEvents++;
    stream.update();
  });
  auto c = std::make_shared<FakeClient>();
  stream.add(c);
  elector.start();
  clock.advance(100ms);
  ASSERT_TRUE(elector.isLeader());
  ASSERT_EQ(c->events.size(), 2u);
  EXPECT_TRUE(c->last()["leader"].get<bool>());
  EXPECT_EQ(c->last()["fencingToken"], 0);

  clock.advance(30s);
  EXPECT_GT(electorEvents, 10) << "renewals happened";
  EXPECT_EQ(c->events.size(), 2u) << "and were not events";
  EXPECT_EQ(c->comments.size(), 2u);

  store.setPartitioned(true);
  const MonoTime partitioned = clock.now();
  MonoTime sawFalse{};
  while (clock.now() - partitioned < 15s) {
    clock.advance(10ms);
    if (c->events.size() == 3u) {
      sawFalse = clock.now();
      break;
    }
  }
  ASSERT_EQ(c->events.size(), 3u);
  EXPECT_FALSE(c->last()["leader"].get<bool>());
  EXPECT_FALSE(elector.isLeader());
  // The last confirmed renewal was sent at most P before the partition: the claim ends by R.
  EXPECT_LE(sawFalse - partitioned, 10s);
  EXPECT_GE(sawFalse - partitioned, 8s - 10ms);
}

}  // namespace
}  // namespace leasehold::publish

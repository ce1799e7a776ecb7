// --fast-failover in the Elector (docs/design.md, "Fast failover"): a follower asks its
// HolderExitWitness about every record another holder wrote, and takes over before the lease
// expires only on a proof about the very record it observed, with the usual compare-and-swap
// and a new fencing token. The witness here is a fake that records what it was asked and fails
// the test on a call it did not expect (a proof delivered with no follow() outstanding).
#include <deque>

#include "ElectorFixture.h"

namespace leasehold::election::testing::fast_failover_test {

using Kind = ElectorEvent::Kind;

class FakeWitness : public HolderExitWitness {
 public:
  void follow(const LeaseRecord& record, std::function<void(std::string)> exited) override {
    log.push_back("follow " + record.holderIdentity + " " + record.resourceVersion.value);
    exited_ = std::move(exited);
    given.push_back(exited_);
  }
  void unfollow() override {
    if (exited_ || log.empty() || log.back() != "unfollow") log.push_back("unfollow");
    exited_ = nullptr;
  }
  // The proof, as HolderPodWatch delivers it: from the loop, once per follow().
  void prove(const std::string& proof) {
    ASSERT_TRUE(exited_) << "a proof with no follow() outstanding";
    auto exited = std::move(exited_);
    exited_ = nullptr;
    exited(proof);
  }
  bool following() const { return static_cast<bool>(exited_); }
  std::vector<std::string> log;
  // Every callback given, for the test of a witness that breaks its contract.
  std::vector<std::function<void(std::string)>> given;

 private:
  std::function<void(std::string)> exited_;
};

class FastFailoverTest : public ElectorFixture {
 protected:
  // Replica "b" following holder "a", with the witness set before start().
  std::unique_ptr<Replica> follower(FakeWitness& witness) {
    auto r = replica("b");
    r->elector->setExitWitness(&witness);
    r->elector->start();
    clock.runDue();
    return r;
  }
};

TEST_F(FastFailoverTest, AProvenExitIsTakenOverAtOnceWithTheNextToken) {
  seed("a", 4);
  const auto seen = stored().resourceVersion;
  FakeWitness witness;
  auto b = follower(witness);
  ASSERT_EQ(witness.log, std::vector<std::string>{"follow a " + seen.value});
  clock.advance(1s);
  EXPECT_FALSE(b->now().leader);

  witness.prove("container leasehold of pod web-0 exited");
  clock.runDue();
  const auto l = b->now();
  EXPECT_TRUE(l.leader);
  EXPECT_EQ(l.fencingToken, 5);
  EXPECT_EQ(stored().holderIdentity, "b");
  EXPECT_EQ(stored().leaseTransitions, 5);
  // 1 s after the observation instead of D = 15 s, and the acquisition says why.
  bool said = false;
  for (const auto& e : b->events) {
    if (e.kind == Kind::kAcquired) {
      said = e.detail.find("before the lease expired: container leasehold of pod web-0 exited") !=
             std::string::npos;
    }
  }
  EXPECT_TRUE(said);
  // Leading now: nobody else's process to ask about.
  EXPECT_FALSE(witness.following());
  EXPECT_EQ(witness.log.back(), "unfollow");
}

// The proof is about the record the witness was given. A holder that renewed wrote a new
// record, which is asked about afresh; a proof about the old one (a witness that broke its
// contract and answered a replaced follow()) takes nothing.
TEST_F(FastFailoverTest, ARenewedRecordIsAskedAboutAgainAndAProofAboutTheOldOneIsIgnored) {
  seed("a", 4);
  FakeWitness witness;
  auto b = follower(witness);
  witness.log.clear();
  LeaseRecord renewed = stored();
  clock.advance(2s);
  renewed.renewTime = clock.wallNow();
  backend.put(renewed);
  clock.runDue();
  ASSERT_EQ(witness.log, std::vector<std::string>{"follow a " + stored().resourceVersion.value});
  ASSERT_EQ(witness.given.size(), 2u);
  witness.given.front()("a late proof about the record before the renewal");
  clock.runDue();
  EXPECT_FALSE(b->now().leader);
  EXPECT_EQ(stored().holderIdentity, "a");
  // No proof for the renewed record: the lease runs D from its observation.
  clock.advance(15s - 1ms);
  EXPECT_FALSE(b->now().leader);
  clock.advance(1ms);
  EXPECT_TRUE(b->now().leader);
}

TEST_F(FastFailoverTest, WithoutAProofTheLeaseExpiresAsUsual) {
  seed("a", 4);
  FakeWitness witness;
  auto b = follower(witness);
  clock.advance(15s - 1ms);
  EXPECT_FALSE(b->now().leader);
  EXPECT_EQ(stored().holderIdentity, "a");
  clock.advance(1ms);
  EXPECT_TRUE(b->now().leader);
  EXPECT_EQ(b->now().fencingToken, 5);
}

// The holder came back (or was never gone) and wrote first: the takeover's compare-and-swap on
// the proven record fails, and the follower claims nothing.
TEST_F(FastFailoverTest, TheTakeoverIsACompareAndSwapOnTheProvenRecord) {
  seed("a", 4);
  FakeWitness witness;
  auto b = follower(witness);
  b->store->setLatency(100ms);
  witness.prove("exited");
  clock.runDue();
  // The holder renews before the takeover reaches the server.
  clock.advance(50ms);
  LeaseRecord renewed = stored();
  renewed.renewTime = clock.wallNow();
  backend.put(renewed);
  clock.advance(200ms);
  EXPECT_FALSE(b->now().leader);
  EXPECT_EQ(stored().holderIdentity, "a");
  EXPECT_EQ(stored().leaseTransitions, 4);
  for (const auto& r : backend.history())
    EXPECT_NE(r.holderIdentity, "b");
}

TEST_F(FastFailoverTest, AReleasedLeaseOrOurOwnIsNotAskedAbout) {
  FakeWitness witness;
  auto b = follower(witness);  // creates the Lease: ours
  EXPECT_TRUE(b->now().leader);
  for (const auto& line : witness.log)
    EXPECT_EQ(line, "unfollow");
}

TEST_F(FastFailoverTest, StoppingStopsTheWitness) {
  seed("a", 4);
  FakeWitness witness;
  auto b = follower(witness);
  ASSERT_TRUE(witness.following());
  bool done = false;
  b->elector->stop([&] { done = true; });
  clock.runDue();
  EXPECT_TRUE(done);
  EXPECT_FALSE(witness.following());
}

TEST_F(FastFailoverTest, CoordinatedModeNeverAsks) {
  seed("a", 4);
  FakeWitness witness;
  auto r = std::make_unique<Replica>();
  r->store = std::make_unique<MemoryLeaseStore>(backend, clock);
  ElectorConfig config{Identity{"b"}, timings, FollowerMode::kWatch};
  config.coordinated = true;
  r->elector = std::make_unique<Elector>(clock, *r->store, config, [] { return 0.5; });
  r->elector->setExitWitness(&witness);
  r->elector->start();
  clock.runDue();
  EXPECT_TRUE(witness.log.empty());
}

}  // namespace leasehold::election::testing::fast_failover_test

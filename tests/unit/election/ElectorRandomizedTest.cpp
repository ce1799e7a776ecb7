// Five electors on one in-memory Lease under random latency, failures, lost answers, partitions,
// broken watches, process pauses, kills, releases, metadata-only edits of the Lease and
// whole-host clock jumps. After every step:
// no two replicas claim at the same instant, claim intervals of different terms never overlap,
// and tokens only go up. The seed is printed; LEASEHOLD_SEED=<n> replays one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <random>

#include "FakeClock.h"
#include "MemoryLeaseStore.h"
#include "election/lease/Elector.h"

namespace leasehold::election {
namespace {

// The tests speak the time vocabulary unqualified.
using namespace leasehold::time;
using namespace std::chrono_literals;

// A process's view of time: while paused, its timers (and so the answers and notifications its
// store delivers) wait; time itself keeps moving, as it does for a SIGSTOPped process.
class PausableClock : public Clock {
 public:
  explicit PausableClock(FakeClock& base) : base_(base) {}
  MonoTime now() const override { return base_.now(); }
  WallTime wallNow() const override { return base_.wallNow(); }
  std::unique_ptr<Timer> makeTimer(std::function<void()> onFire) override {
    return std::make_unique<PausableTimer>(*this, std::move(onFire));
  }
  bool paused() const { return paused_; }
  void pause() { paused_ = true; }
  void resume() {
    paused_ = false;
    while (!paused_ && !deferred_.empty()) {
      auto* t = deferred_.front();
      deferred_.pop_front();
      t->onFire_();
    }
  }

 private:
  class PausableTimer : public Timer {
   public:
    PausableTimer(PausableClock& owner, std::function<void()> onFire)
        : owner_(owner), onFire_(std::move(onFire)) {
      inner_ = owner_.base_.makeTimer([this] {
        if (owner_.paused_) {
          owner_.deferred_.push_back(this);
        } else {
          onFire_();
        }
      });
    }
    ~PausableTimer() override { undefer(); }
    void armAt(MonoTime d) override {
      undefer();
      inner_->armAt(d);
    }
    void disarm() override {
      undefer();
      inner_->disarm();
    }
    bool armed() const override {
      return inner_->armed() || std::find(owner_.deferred_.begin(), owner_.deferred_.end(), this) !=
                                    owner_.deferred_.end();
    }
    void undefer() {
      auto& d = owner_.deferred_;
      d.erase(std::remove(d.begin(), d.end(), this), d.end());
    }
    PausableClock& owner_;
    std::function<void()> onFire_;
    std::unique_ptr<Timer> inner_;
  };

  FakeClock& base_;
  bool paused_ = false;
  std::deque<PausableTimer*> deferred_;
};

struct Term {
  int process;  // a process instance (a restart is a new one)
  std::int64_t token;
  MonoTime start;
  MonoTime end;  // latest validUntil seen, cut short by a release or step-down
  bool open;
};

class Simulation {
 public:
  explicit Simulation(std::uint64_t seed) : rng_(seed) {
    nodes_.resize(5);  // electors keep pointers to their Node: never reallocate
    for (int i = 0; i < 5; i++)
      spawn(i, "replica-" + std::to_string(i));
  }

  void run(int steps) {
    for (int step = 0; step < steps && !::testing::Test::HasFailure(); step++) {
      act();
      check(step);
    }
    heal();
    clock_.advance(timings_.leaseDuration + timings_.retryPeriod + 1s);
    check(steps);
    int leaders = 0;
    for (auto& n : nodes_)
      if (n.alive && n.elector->isLeader()) leaders++;
    EXPECT_EQ(leaders, 1) << "once faults stop, a leader exists within D + P";
    closeAll();
    checkTerms();
  }

  int terms() const { return static_cast<int>(terms_.size()); }

 private:
  struct Node {
    int slot;
    int process;
    std::string identity;
    std::unique_ptr<PausableClock> clock;
    std::unique_ptr<MemoryLeaseStore> store;
    std::unique_ptr<Elector> elector;
    bool alive = false;
    bool partitioned = false;
    bool watchBroken = false;
    std::optional<MonoTime> resumeAt;
    std::optional<MonoTime> restartAt;
    int term = -1;  // index into terms_ while leading
  };

  double uniform() { return std::uniform_real_distribution<double>(0, 1)(rng_); }
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  Duration upTo(Duration d) { return Duration(static_cast<Duration::rep>(uniform() * d.count())); }

  void spawn(int slot, std::string identity) {
    Node& n = nodes_[slot];
    n.slot = slot;
    n.process = nextProcess_++;
    n.identity = std::move(identity);
    n.clock = std::make_unique<PausableClock>(clock_);
    n.store = std::make_unique<MemoryLeaseStore>(backend_, *n.clock, clock_);
    n.store->setRequestTimeout(3s);
    n.elector =
        std::make_unique<Elector>(*n.clock, *n.store, ElectorConfig{Identity{n.identity}, timings_},
                                  [this] { return uniform(); });
    n.alive = true;
    n.partitioned = n.watchBroken = false;
    n.resumeAt.reset();
    n.restartAt.reset();
    n.term = -1;
    Node* raw = &n;
    n.elector->setEventHandler([this, raw](const ElectorEvent& e) { onEvent(*raw, e); });
    n.elector->start();
  }

  void onEvent(Node& n, const ElectorEvent& e) {
    const auto l = n.elector->leadership();
    if (e.kind == ElectorEvent::Kind::kAcquired && l.leader) {
      closeTerm(n, clock_.now());
      n.term = static_cast<int>(terms_.size());
      terms_.push_back(Term{n.process, *l.fencingToken, clock_.now(), *l.validUntilMono, true});
    } else if (e.kind == ElectorEvent::Kind::kRenewed && l.leader && n.term >= 0) {
      terms_[n.term].end = std::max(terms_[n.term].end, *l.validUntilMono);
    } else if (e.kind == ElectorEvent::Kind::kSteppedDown) {
      closeTerm(n, clock_.now());
    }
  }

  // The claim ended at `at` or at its deadline, whichever came first (a paused process hears
  // about its deadline late, but answered leader=false from the deadline on).
  void closeTerm(Node& n, MonoTime at) {
    if (n.term < 0) return;
    auto& t = terms_[n.term];
    t.end = std::min(t.end, at);
    t.open = false;
    n.term = -1;
  }

  void closeAll() {
    for (auto& n : nodes_)
      if (n.alive) closeTerm(n, clock_.now());
  }

  void act() {
    const int r = pick(100);
    Node& n = nodes_[pick(static_cast<int>(nodes_.size()))];
    if (r < 54) {
      clock_.advance(upTo(400ms));
    } else if (r < 55) {
      // Somebody edits the Lease's metadata only (kubectl label/annotate): never a new term.
      if (auto current = backend_.current()) {
        current->opaque = R"({"metadata":{"labels":{"edit":")" + std::to_string(++edits_) + "\"}}}";
        backend_.put(*current);
      }
    } else if (r < 75) {
      clock_.advance(upTo(30ms));
    } else if (r < 80) {
      if (n.alive) n.store->setLatency(pick(4) == 0 ? upTo(2s) : upTo(200ms));
    } else if (r < 83) {
      if (n.alive) {
        const StoreStatus s = pick(3) == 0 ? StoreStatus::kFatal : StoreStatus::kTransient;
        n.store->failNext(1 + pick(3), s,
                          pick(2) ? std::optional<Duration>(upTo(3s)) : std::nullopt);
      }
    } else if (r < 86) {
      if (n.alive) n.store->loseNextResponses(1 + pick(2));
    } else if (r < 88) {
      if (n.alive) n.store->setPartitioned(n.partitioned = !n.partitioned);
    } else if (r < 90) {
      if (n.alive) n.store->setWatchHealthy(!(n.watchBroken = !n.watchBroken));
    } else if (r < 94) {
      if (n.alive && !n.clock->paused()) {
        n.clock->pause();
        n.resumeAt = clock_.now() + upTo(3 * timings_.leaseDuration);
      }
    } else if (r < 96) {
      if (n.alive) kill(n);
    } else if (r < 98) {
      if (n.alive && !n.clock->paused()) {
        closeTerm(n, clock_.now());  // stop() stops claiming synchronously
        n.elector->stop(nullptr);
        n.restartAt = clock_.now() + upTo(20s);
      }
    } else {
      // The whole host froze (all processes and the API server alike).
      clock_.jump(upTo(2 * timings_.leaseDuration));
    }
    maintain();
  }

  void kill(Node& n) {
    closeTerm(n, clock_.now());
    n.elector.reset();
    n.store.reset();
    n.alive = false;
    n.restartAt = clock_.now() + upTo(10s);
  }

  void maintain() {
    for (auto& n : nodes_) {
      if (n.alive && n.resumeAt && clock_.now() >= *n.resumeAt) {
        n.resumeAt.reset();
        n.clock->resume();
      }
      if (n.restartAt && clock_.now() >= *n.restartAt) {
        if (n.alive) kill(n);
        // Half the restarts keep the identity: the old lease then names "us" but is not ours.
        spawn(n.slot,
              pick(2) ? n.identity
                      : "replica-" + std::to_string(n.slot) + "-p" + std::to_string(nextProcess_));
      }
    }
  }

  void heal() {
    for (auto& n : nodes_) {
      if (!n.alive) spawn(n.slot, n.identity);
      n.restartAt.reset();
      if (n.clock->paused()) n.clock->resume();
      n.resumeAt.reset();
      n.store->setPartitioned(n.partitioned = false);
      n.store->setWatchHealthy(true);
      n.watchBroken = false;
      n.store->setLatency(0ms);
    }
  }

  void check(int step) {
    int leaders = 0;
    std::string who;
    for (auto& n : nodes_) {
      if (!n.alive) continue;
      const auto l = n.elector->leadership();
      if (!l.leader) continue;
      leaders++;
      who += n.identity + " ";
      if (n.term >= 0) {
        EXPECT_EQ(terms_[n.term].token, *l.fencingToken) << "token changed within a term";
        terms_[n.term].end = std::max(terms_[n.term].end, *l.validUntilMono);
      } else {
        ADD_FAILURE() << n.identity << " claims leadership without an Acquired event";
      }
    }
    ASSERT_LE(leaders, 1) << "two leaders at step " << step << ": " << who;
  }

  void checkTerms() {
    auto sorted = terms_;
    std::sort(sorted.begin(), sorted.end(),
              [](const Term& a, const Term& b) { return a.start < b.start; });
    for (std::size_t j = 1; j < sorted.size(); j++) {
      const Term& prev = sorted[j - 1];
      const Term& t = sorted[j];
      EXPECT_GE(t.start, prev.end)
          << "claims overlap: process " << prev.process << " (token " << prev.token << ") and "
          << t.process << " (token " << t.token << ")";
      if (t.process != prev.process) {
        EXPECT_GT(t.token, prev.token) << "token did not go up on a new holder";
      } else {
        EXPECT_GE(t.token, prev.token);
      }
    }
    for (std::size_t j = 1; j < sorted.size(); j++) {
      // Non-adjacent overlaps too: a long claim must not cover a later one.
      for (std::size_t i = 0; i < j; i++) {
        if (sorted[i].process != sorted[j].process) {
          ASSERT_LE(sorted[i].end, sorted[j].start) << "overlapping terms " << i << " " << j;
        }
      }
    }
  }

  std::mt19937_64 rng_;
  FakeClock clock_;
  MemoryLeaseBackend backend_;
  int edits_ = 0;
  ElectionTimings timings_{15s, 10s, 2s, 1.2};
  std::vector<Node> nodes_;
  std::vector<Term> terms_;
  int nextProcess_ = 0;
};

std::vector<std::uint64_t> seeds() {
  if (const char* s = std::getenv("LEASEHOLD_SEED")) return {std::strtoull(s, nullptr, 10)};
  return {1, 2, 3, 20261130, 424242};
}

TEST(ElectorRandomizedTest, NoTwoLeadersAndTokensOnlyGoUp) {
  for (const auto seed : seeds()) {
    SCOPED_TRACE("seed " + std::to_string(seed) +
                 " (replay: LEASEHOLD_SEED=" + std::to_string(seed) + ")");
    std::printf("randomized election: seed %llu\n", static_cast<unsigned long long>(seed));
    Simulation sim(seed);
    sim.run(10000);
    std::printf("  %d terms\n", sim.terms());
    EXPECT_GT(sim.terms(), 20) << "the faults should force many handovers";
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace leasehold::election

// Run mode's way out (lock::RunMode: one command for one Lease, one per shard for leasehold run
// --shards N, shard::shardCommands) on FakeClock with a FakeCommandLauncher per command, which
// fails the test on any call it does not expect. The first signal (noteSignal, what ProcessSignals
// does before the shutdown sequence) or a command ending on its own stops every command at once.
// The sequence reaches each Sidecar's shutdown (its CommandPort's stopForShutdown, "stop" below)
// only after an API round trip (shards: deleting the membership Lease; one Lease with
// --coordinated: deleting the LeaseCandidate): a command led in between starts nothing, a running
// command gets the signal once, and its port's shutdown is ready once its group is gone.
//
// Each case is a script as in SupervisorTest: at time t something happens, and exactly these
// calls come. "0: ..." is command 0's launcher (and its port's ready callbacks); anything else is
// the run mode's own (the shutdown it asks for, the second signal's answer). --kill-grace 3s (the
// reap allowance is 100 ms), --drain-timeout 25s, --restart never.
#include "lock/RunMode.h"
#include "shard/ShardCommands.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <sstream>

#include "FakeClock.h"
#include "FakeCommandLauncher.h"

namespace leasehold::lock {
namespace {

using namespace std::chrono_literals;
using supervise::ExitStatus;
using supervise::FakeCommandLauncher;

struct Step {
  const char* at;      // advance the clock to this time, firing timers on the way
  const char* action;  // then do this ("" for nothing; see act())
  std::vector<std::string> calls;
};

struct Case {
  const char* name;
  std::vector<Step> steps;
  int exitCode = 0;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

// What the scripts drive, the same for both run modes.
struct UnderTest {
  std::shared_ptr<void> owner;
  std::function<void(int)> noteSignal;
  std::function<bool(int)> secondSignal;
  std::function<int()> exitCode;
  std::vector<CommandPort> ports;
};

class RunModeScript : public ::testing::TestWithParam<Case> {
 protected:
  RunModeScript()
      : origin_(clock_.now()),
        devNull_(::open("/dev/null", O_WRONLY | O_CLOEXEC)),
        logger_(log::Format::kText, log::Level::kDebug, devNull_) {
    config_.command = {"my-job"};
    config_.lease = "ns/work";
    config_.identity = "web-0_1234abcd";
    config_.killGrace = 3s;
    config_.drainTimeout = 25s;
  }
  ~RunModeScript() override {
    mode_ = {};  // before the launchers it uses
    ::close(devNull_);
  }

  std::vector<supervise::ProcessLauncher*> launchers(std::size_t n) {
    std::vector<supervise::ProcessLauncher*> out;
    for (std::size_t i = 0; i < n; i++) {
      launchers_.push_back(std::make_unique<FakeCommandLauncher>(clock_, origin_));
      out.push_back(launchers_.back().get());
    }
    tokens_.assign(n, 0);
    return out;
  }

  template <class M>
  void adopt(std::shared_ptr<M> m, std::vector<CommandPort> ports) {
    m->setShutdownRequest([this] { journal_.push_back(stamp("request-shutdown")); });
    mode_.noteSignal = [raw = m.get()](int signo) { raw->noteSignal(signo); };
    mode_.secondSignal = [raw = m.get()](int signo) { return raw->secondSignal(signo); };
    mode_.exitCode = [raw = m.get()] { return raw->exitCode(); };
    mode_.ports = std::move(ports);
    mode_.owner = std::move(m);
  }

  // One Lease: command 0.
  void makeSingle() {
    auto m = std::make_shared<RunMode>(io_, clock_, std::vector<RunMode::Command>{{config_, {}}},
                                       launchers(1), logger_);
    adopt(m, {m->port()});
  }
  // Two shards: ns/work-0 and ns/work-1.
  void makeShards() {
    auto m = std::make_shared<RunMode>(io_, clock_,
                                       shard::shardCommands(config_, {"ns/work-0", "ns/work-1"}),
                                       launchers(2), logger_);
    adopt(m, {m->port(0), m->port(1)});
  }

  std::string stamp(const std::string& what) const {
    return "@" + FakeCommandLauncher::seconds(clock_.now() - origin_) + " " + what;
  }
  time::MonoTime at(const std::string& seconds) const {
    return origin_ + FakeCommandLauncher::parseSeconds(seconds);
  }

  // One word of a script; <i> is a command (a shard's).
  void act(const std::string& action) {
    std::istringstream in(action);
    std::string verb, a, b, c;
    in >> verb >> a >> b >> c;
    if (verb.empty()) return;
    if (verb == "signal") return mode_.noteSignal(a == "INT" ? SIGINT : SIGTERM);
    if (verb == "second") {
      const bool any = mode_.secondSignal(SIGTERM);
      journal_.push_back(stamp(any ? "second signal: commands to kill" : "second signal: none"));
      return;
    }
    const std::size_t i = std::stoul(a);
    auto& launcher = *launchers_.at(i);
    if (verb == "lead") {  // lead <i> <token> <valid until>
      tokens_[i] = std::stoll(b);
      return mode_.ports.at(i).leading(tokens_[i], at(c));
    }
    if (verb == "renew") return mode_.ports.at(i).leading(tokens_[i], at(b));  // renew <i> <until>
    if (verb == "lose") return mode_.ports.at(i).lost();
    if (verb == "stop") {  // the shard's Sidecar shuts down
      return mode_.ports.at(i).stopForShutdown([&launcher] { launcher.call("shutdown-ready"); });
    }
    if (verb == "exit") return launcher.groupExits(ExitStatus::exited(std::stoi(b)));
    if (verb == "killed") return launcher.groupExits(ExitStatus::signaled(std::stoi(b)));
    FAIL() << "unknown action " << action;
  }

  // What the run mode posts runs before the step is judged.
  void runPosted() {
    io_.restart();
    io_.poll();
  }

  void run(const std::vector<Step>& steps) {
    for (const auto& step : steps) {
      const std::string where = std::string("at ") + step.at + " (" + step.action + ")";
      SCOPED_TRACE(where);
      std::vector<std::vector<std::string>> perCommand(launchers_.size());
      std::vector<std::string> own;
      for (const std::string& call : step.calls) {
        if (call.size() > 3 && call[1] == ':' && call[2] == ' ') {
          perCommand.at(static_cast<std::size_t>(call[0] - '0')).push_back(call.substr(3));
        } else {
          own.push_back(call);
        }
      }
      for (std::size_t i = 0; i < launchers_.size(); i++)
        launchers_[i]->expect(perCommand[i]);
      journal_.clear();
      const time::MonoTime target = at(step.at);
      ASSERT_GE(target, clock_.now()) << "steps go forward in time";
      clock_.advance(target - clock_.now());
      runPosted();
      act(step.action);
      runPosted();
      for (std::size_t i = 0; i < launchers_.size(); i++)
        launchers_[i]->verifyAllCame(where + ", command " + std::to_string(i));
      EXPECT_EQ(journal_, own);
    }
  }

  boost::asio::io_context io_;
  time::FakeClock clock_;
  time::MonoTime origin_;
  std::vector<std::unique_ptr<FakeCommandLauncher>> launchers_;
  int devNull_;
  log::Logger logger_;
  supervise::SupervisorConfig config_;
  UnderTest mode_;
  std::vector<std::int64_t> tokens_;
  std::vector<std::string> journal_;
};

class RunModeShardsTest : public RunModeScript {};

TEST_P(RunModeShardsTest, CallsExactlyThis) {
  makeShards();
  run(GetParam().steps);
  EXPECT_EQ(mode_.exitCode(), GetParam().exitCode);
}

const Case kShardCases[] = {
    // The membership Lease is being deleted when shard 0's acquisition lands: its command
    // must not start (the process is on its way out), and both Sidecars' shutdowns are ready
    // at once.
    {"AShardLedAfterTheSignalStartsNoCommand",
     {{"0s", "signal TERM", {}},
      {"1s", "lead 0 7 10s", {}},
      {"2s", "renew 0 12s", {}},
      {"3s", "stop 0", {"0: @3s shutdown-ready"}},
      {"3s", "stop 1", {"1: @3s shutdown-ready"}}}},
    // Both commands drain from the signal on, while renewals go on; the Sidecar's shutdown that
    // comes later does not signal again (a second call would be the second signal's SIGKILL),
    // it waits for the group. Exit status: the first non-zero, in time order.
    {"ARunningCommandGetsTheSignalOnceAndItsShutdownWaitsForItsGroup",
     {{"0s", "lead 0 7 10s", {"0: @0s start token=7 killBy=9.9s"}},
      {"0s", "lead 1 4 10s", {"1: @0s start token=4 killBy=9.9s"}},
      {"1s", "signal TERM", {"0: @1s signal TERM", "1: @1s signal TERM"}},
      {"2s", "renew 0 12s", {"0: @2s guard 11.9s"}},
      {"3s", "stop 0", {}},
      {"3s", "killed 1 15", {}},
      {"4s", "exit 0 1", {"0: @4s shutdown-ready"}},
      {"5s", "stop 1", {"1: @5s shutdown-ready"}},
      {"60s", "", {}}},
     143},
    {"SigintIsForwardedAsSigint",
     {{"0s", "lead 1 4 10s", {"1: @0s start token=4 killBy=9.9s"}},
      {"1s", "signal INT", {"1: @1s signal INT"}},
      {"1s", "stop 0", {"0: @1s shutdown-ready"}},
      {"1s", "stop 1", {}},
      {"1.5s", "killed 1 2", {"1: @1.5s shutdown-ready"}}},
     130},
    // The drain's clock starts at the signal, not at the Sidecar's shutdown.
    {"TheDrainTimeoutCountsFromTheSignal",
     {{"0s", "lead 0 7 100s", {"0: @0s start token=7 killBy=99.9s"}},
      {"1s", "signal TERM", {"0: @1s signal TERM"}},
      {"5s", "stop 0", {}},
      {"5s", "stop 1", {"1: @5s shutdown-ready"}},
      {"27s", "", {"0: @26s signal KILL"}},
      {"27s", "killed 0 9", {"0: @27s shutdown-ready"}}},
     137},
    {"ASecondSignalKillsWhatStillRuns",
     {{"0s", "lead 0 7 10s", {"0: @0s start token=7 killBy=9.9s"}},
      {"1s", "signal TERM", {"0: @1s signal TERM"}},
      {"1s", "stop 0", {}},
      {"1s", "stop 1", {"1: @1s shutdown-ready"}},
      {"2s", "second", {"0: @2s signal KILL", "@2s second signal: commands to kill"}},
      {"2s", "killed 0 9", {"0: @2s shutdown-ready"}},
      {"3s", "second", {"@3s second signal: none"}}},
     137},
    // --restart never: shard 0's command ends, so the whole process goes. Shard 1's command
    // drains from that instant (not once the membership Lease is gone); the shutdown is asked
    // for once, and a signal that comes meanwhile adds nothing.
    {"ACommandEndingOnItsOwnStopsEveryOtherAtOnceAndAsksForTheShutdownOnce",
     {{"0s", "lead 0 7 10s", {"0: @0s start token=7 killBy=9.9s"}},
      {"0s", "lead 1 4 10s", {"1: @0s start token=4 killBy=9.9s"}},
      {"1s", "exit 0 2", {"1: @1s signal TERM", "@1s request-shutdown"}},
      {"2s", "renew 0 12s", {}},
      {"2s", "renew 1 12s", {"1: @2s guard 11.9s"}},
      {"2s", "signal TERM", {}},
      {"3s", "stop 0", {"0: @3s shutdown-ready"}},
      {"3s", "stop 1", {}},
      {"4s", "exit 1 0", {"1: @4s shutdown-ready"}}},
     2},
    // The same with the other shard idle: it is done at once and starts nothing afterwards.
    {"ACommandEndingOnItsOwnLeavesNoShardToStartOne",
     {{"0s", "lead 0 7 10s", {"0: @0s start token=7 killBy=9.9s"}},
      {"1s", "exit 0 0", {"@1s request-shutdown"}},
      {"2s", "lead 1 4 12s", {}},
      {"3s", "stop 1", {"1: @3s shutdown-ready"}},
      {"3s", "stop 0", {"0: @3s shutdown-ready"}}}},
};

INSTANTIATE_TEST_SUITE_P(Scripts, RunModeShardsTest, ::testing::ValuesIn(kShardCases),
                         [](const auto& info) { return std::string(info.param.name); });

class RunModeTest : public RunModeScript {};

TEST_P(RunModeTest, CallsExactlyThis) {
  makeSingle();
  run(GetParam().steps);
  EXPECT_EQ(mode_.exitCode(), GetParam().exitCode);
}

// One Lease (leasehold run): with --coordinated the shutdown sequence deletes this replica's
// LeaseCandidate first, an API round trip before Sidecar::shutdown, in which the controller may
// still name this replica and the Elector acquire.
const Case kSingleCases[] = {
    {"ALeadAfterTheSignalStartsNoCommand",
     {{"0s", "signal TERM", {}},
      {"1s", "lead 0 7 10s", {}},
      {"2s", "renew 0 12s", {}},
      {"3s", "stop 0", {"0: @3s shutdown-ready"}}}},
    {"ARunningCommandGetsTheSignalOnceAndItsShutdownWaitsForItsGroup",
     {{"0s", "lead 0 7 10s", {"0: @0s start token=7 killBy=9.9s"}},
      {"1s", "signal TERM", {"0: @1s signal TERM"}},
      {"2s", "renew 0 12s", {"0: @2s guard 11.9s"}},
      {"3s", "stop 0", {}},
      {"4s", "exit 0 0", {"0: @4s shutdown-ready"}},
      {"60s", "", {}}}},
    {"ASecondSignalKillsTheCommand",
     {{"0s", "lead 0 7 10s", {"0: @0s start token=7 killBy=9.9s"}},
      {"1s", "signal INT", {"0: @1s signal INT"}},
      {"1s", "stop 0", {}},
      {"2s", "second", {"0: @2s signal KILL", "@2s second signal: commands to kill"}},
      {"2s", "killed 0 9", {"0: @2s shutdown-ready"}},
      {"3s", "second", {"@3s second signal: none"}}},
     137},
    // --restart never: the command's end asks for the shutdown, once; a signal meanwhile adds
    // nothing.
    {"TheCommandEndingOnItsOwnAsksForTheShutdownOnce",
     {{"0s", "lead 0 7 10s", {"0: @0s start token=7 killBy=9.9s"}},
      {"1s", "exit 0 3", {"@1s request-shutdown"}},
      {"2s", "signal TERM", {}},
      {"2s", "lead 0 7 12s", {}},
      {"3s", "stop 0", {"0: @3s shutdown-ready"}}},
     3},
};

INSTANTIATE_TEST_SUITE_P(Scripts, RunModeTest, ::testing::ValuesIn(kSingleCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace leasehold::lock

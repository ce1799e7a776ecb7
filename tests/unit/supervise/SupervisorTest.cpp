// The Supervisor's rules on FakeClock with a fake launcher that fails the test on any call it
// does not expect. Each case is a script: at time t (since the case began) something happens,
// and exactly these calls come, in this order, on the way there and from it. Unless a case says
// otherwise: --kill-grace 3s (so the reap allowance is 100 ms), --drain-timeout 25s,
// --restart never; "lead 7 10s" means term 7, claim valid until 10 s. Long because the scripts
// are one table (kCases), a row for each of the Supervisor's rules, with every call spelled out.
#include "supervise/Supervisor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <sstream>

#include "FakeClock.h"
#include "FakeCommandLauncher.h"

namespace leasehold::supervise {
namespace {

using namespace std::chrono_literals;

struct Step {
  const char* at;      // "9.95s": advance the clock to this time, firing timers on the way
  const char* action;  // then do this ("" for nothing; see act())
  std::vector<std::string> calls;
};

struct Case {
  const char* name;
  RestartPolicy restart = RestartPolicy::kNever;
  bool exitOnLoss = false;
  std::vector<Step> steps;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

constexpr auto parseSeconds = FakeCommandLauncher::parseSeconds;

class SupervisorTest : public ::testing::Test {
 protected:
  SupervisorTest()
      : origin_(clock_.now()),
        launcher_(clock_, origin_),
        devNull_(::open("/dev/null", O_WRONLY | O_CLOEXEC)),
        logger_(log::Format::kText, log::Level::kDebug, devNull_) {}
  ~SupervisorTest() override {
    supervisor_.reset();
    ::close(devNull_);
  }

  Supervisor& make(RestartPolicy restart = RestartPolicy::kNever, bool exitOnLoss = false) {
    SupervisorConfig config;
    config.command = {"my-job", "--flag"};
    config.lease = "ns/lease";
    config.identity = "web-0_1234abcd";
    config.killGrace = 3s;
    config.drainTimeout = 25s;
    config.restart = restart;
    config.exitOnLoss = exitOnLoss;
    SupervisorHooks hooks{[this] { launcher_.call("ready-to-release"); },
                          [this](int code) { launcher_.call("finish " + std::to_string(code)); }};
    supervisor_ = std::make_unique<Supervisor>(clock_, launcher_, config, hooks, logger_);
    return *supervisor_;
  }

  // One word of a script.
  void act(const std::string& action) {
    std::istringstream in(action);
    std::string verb, a, b;
    in >> verb >> a >> b;
    auto& s = *supervisor_;
    if (verb.empty()) return;
    if (verb == "lead") {
      token_ = std::stoll(a);
      return s.leading(token_, origin_ + parseSeconds(b));
    }
    if (verb == "renew") return s.leading(token_, origin_ + parseSeconds(a));
    if (verb == "lose") return s.lost();
    if (verb == "release") return s.release();
    if (verb == "signal") return s.shutdown(a == "INT" ? SIGINT : SIGTERM);
    if (verb == "abort") return s.abort("the watchdog died");
    if (verb == "exit") return launcher_.groupExits(ExitStatus::exited(std::stoi(a)));
    if (verb == "killed") return launcher_.groupExits(ExitStatus::signaled(std::stoi(a)));
    if (verb == "fail-next-start") return launcher_.failNextStart("my-job: no such executable");
    if (verb == "pause-until") {
      // The process was stopped: time passes, nothing runs.
      return clock_.jump(origin_ + parseSeconds(a) - clock_.now());
    }
    if (verb == "paused-while-the-watchdog-kills-until") {
      // Stopped, and on waking the group's death is the first thing seen.
      clock_.jump(origin_ + parseSeconds(a) - clock_.now());
      return launcher_.groupExits(ExitStatus::signaled(SIGKILL));
    }
    FAIL() << "unknown action " << action;
  }

  void run(const std::vector<Step>& steps) {
    for (const auto& step : steps) {
      const std::string where = std::string("at ") + step.at + " (" + step.action + ")";
      SCOPED_TRACE(where);
      launcher_.expect(step.calls);
      const time::MonoTime target = origin_ + parseSeconds(step.at);
      ASSERT_GE(target, clock_.now()) << "steps go forward in time";
      clock_.advance(target - clock_.now());
      act(step.action);
      launcher_.verifyAllCame(where);
    }
  }

  time::FakeClock clock_;
  time::MonoTime origin_;
  FakeCommandLauncher launcher_;
  int devNull_;
  log::Logger logger_;
  std::unique_ptr<Supervisor> supervisor_;
  std::int64_t token_ = 0;
};

class SupervisorScriptTest : public SupervisorTest, public ::testing::WithParamInterface<Case> {};

TEST_P(SupervisorScriptTest, CallsExactlyThis) {
  const auto& c = GetParam();
  make(c.restart, c.exitOnLoss);
  run(c.steps);
}

const Case kCases[] = {
    // ---- start ------------------------------------------------------------------------------
    {"StartsWhenLeadingWithTheTermsTokenAndRenewalsMoveTheBackstop",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"2s", "renew 12s", {"@2s guard 11.9s"}},
      {"4s", "renew 14s", {"@4s guard 13.9s"}},
      {"10s", "renew 20s", {"@10s guard 19.9s"}}}},
    {"NothingWhileFollowing", RestartPolicy::kNever, false, {{"0s", "", {}}, {"60s", "", {}}}},
    {"NoStartWithinTheGraceOfTheDeadlineUntilARenewal",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 2.5s", {}}, {"1s", "renew 11s", {"@1s start token=7 killBy=10.9s"}}}},
    {"AStartThatFailsCountsAsExit127",
     RestartPolicy::kNever,
     false,
     {{"0s", "fail-next-start", {}},
      {"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s", "@0s finish 127"}}}},

    // ---- stop timing relative to R ------------------------------------------------------------
    {"RenewalsFailingSigtermAtRMinusGraceSigkillAtRMinusAllowance",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"2s", "renew 12s", {"@2s guard 11.9s"}},
      {"20s", "", {"@9s signal TERM", "@11.9s signal KILL"}},
      {"20s", "lose", {}},
      {"20.01s", "killed 9", {}},
      {"30s", "lead 8 40s", {"@30s start token=8 killBy=39.9s"}}}},
    {"ACommandThatStopsOnSigtermIsNotKilled",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"8s", "killed 15", {"@7s signal TERM"}},
      {"10s", "lose", {}},
      {"60s", "", {}}}},
    {"ALateRenewalDoesNotCancelTheStopAndTheCommandStartsAgainInTheSameTerm",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"8s", "renew 18s", {"@7s signal TERM", "@8s guard 17.9s"}},
      {"8.5s", "killed 15", {"@8.5s start token=7 killBy=17.9s"}}}},
    {"LeadershipLostEarlySigtermAtOnceSigkillWhenTheGraceRunsOut",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"2s", "renew 12s", {"@2s guard 11.9s"}},
      {"3s", "lose", {"@3s signal TERM"}},
      {"7s", "", {"@6s signal KILL"}},
      {"7s", "killed 9", {}},
      {"60s", "", {}}}},
    {"LeadershipLostLateSigkillByTheDeadlineNotAfterTheGrace",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"6.95s", "lose", {"@6.95s signal TERM"}},
      {"11s", "", {"@9.9s signal KILL"}}}},
    {"PausedPastTheDeadlineTheGroupTheWatchdogKilledIsNotAnOwnExit",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"1s", "paused-while-the-watchdog-kills-until 15s", {}},
      {"15s", "lose", {}},
      {"60s", "", {}}}},
    {"PausedPastTheDeadlineTheOverdueTimersKillAtOnceOnWaking",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"1s", "pause-until 15s", {}},
      {"15s", "", {"@15s signal KILL"}},
      {"15s", "lose", {}},
      {"15s", "killed 9", {}},
      {"60s", "", {}}}},
    {"ANewTermWhileTheOldGroupStopsStartsWithTheNewTokenOnceItIsGone",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"3s", "lose", {"@3s signal TERM"}},
      {"4s", "lead 8 14s", {}},
      {"5s", "killed 15", {"@5s start token=8 killBy=13.9s"}}}},

    // ---- restart policy -----------------------------------------------------------------------
    {"RestartNeverTheCommandsOwnExitReleasesAndExitsWithItsStatus",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}}, {"5s", "exit 3", {"@5s finish 3"}}}},
    {"RestartNeverASignalDeathExits128PlusTheSignal",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"5s", "killed 11", {"@5s finish 139"}}}},
    {"RestartOnFailureExit0Finishes",
     RestartPolicy::kOnFailure,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}}, {"5s", "exit 0", {"@5s finish 0"}}}},
    {"RestartOnFailureRestartsInTheSameTermAfter1s2s4s",
     RestartPolicy::kOnFailure,
     false,
     {{"0s", "lead 7 100s", {"@0s start token=7 killBy=99.9s"}},
      {"1s", "exit 1", {}},
      {"2s", "", {"@2s start token=7 killBy=99.9s"}},
      {"3s", "exit 1", {}},
      {"5s", "", {"@5s start token=7 killBy=99.9s"}},
      {"6s", "killed 6", {}},
      {"9.9s", "", {}},
      {"10s", "", {"@10s start token=7 killBy=99.9s"}}}},
    {"RestartAlwaysBackoffDoublesTo30sAndResetsAfterA30sRun",
     RestartPolicy::kAlways,
     false,
     {{"0s", "lead 7 1000s", {"@0s start token=7 killBy=999.9s"}},
      {"0s", "exit 0", {}},
      {"1s", "", {"@1s start token=7 killBy=999.9s"}},
      {"1s", "exit 0", {}},
      {"3s", "", {"@3s start token=7 killBy=999.9s"}},
      {"3s", "exit 0", {}},
      {"7s", "", {"@7s start token=7 killBy=999.9s"}},
      {"7s", "exit 0", {}},
      {"15s", "", {"@15s start token=7 killBy=999.9s"}},
      {"15s", "exit 0", {}},
      {"31s", "", {"@31s start token=7 killBy=999.9s"}},
      {"31s", "exit 0", {}},
      {"61s", "", {"@61s start token=7 killBy=999.9s"}},
      {"61s", "exit 0", {}},
      {"91s", "", {"@91s start token=7 killBy=999.9s"}},
      {"121s", "exit 0", {}},
      {"122s", "", {"@122s start token=7 killBy=999.9s"}}}},
    {"ARestartDueNearTheDeadlineWaitsForARenewal",
     RestartPolicy::kAlways,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"6.5s", "exit 1", {}},
      {"7.6s", "", {}},
      {"8s", "renew 18s", {"@8s start token=7 killBy=17.9s"}}}},
    {"LostDuringTheBackoffNoRestartAndANewTermStartsAtOnce",
     RestartPolicy::kAlways,
     false,
     {{"0s", "lead 7 100s", {"@0s start token=7 killBy=99.9s"}},
      {"1s", "exit 1", {}},
      {"1.5s", "lose", {}},
      {"5s", "", {}},
      {"6s", "lead 8 50s", {"@6s start token=8 killBy=49.9s"}}}},

    // ---- exit on loss -------------------------------------------------------------------------
    {"ExitOnLossExits3OnceTheGroupIsGone",
     RestartPolicy::kNever,
     true,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"3s", "lose", {"@3s signal TERM"}},
      {"4s", "killed 15", {"@4s finish 3"}}}},
    {"ExitOnLossDuringTheBackoffExitsAtOnce",
     RestartPolicy::kAlways,
     true,
     {{"0s", "lead 7 100s", {"@0s start token=7 killBy=99.9s"}},
      {"1s", "exit 1", {}},
      {"1.5s", "lose", {"@1.5s finish 3"}}}},
    {"ExitOnLossNotBeforeATermWasLed",
     RestartPolicy::kNever,
     true,
     {{"0s", "lose", {}}, {"10s", "lead 7 20s", {"@10s start token=7 killBy=19.9s"}}}},

    // ---- release ------------------------------------------------------------------------------
    {"ReleaseStopsTheGroupFirstAndStartsNothingUntilANewTerm",
     RestartPolicy::kAlways,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"2s", "renew 12s", {"@2s guard 11.9s"}},
      {"3s", "release", {"@3s signal TERM"}},
      {"4s", "renew 14s", {"@4s guard 13.9s"}},
      {"4.5s", "exit 0", {"@4.5s ready-to-release"}},
      {"5s", "renew 15s", {}},
      {"5s", "lose", {}},
      {"20s", "lead 8 30s", {"@20s start token=8 killBy=29.9s"}}}},
    {"ReleaseSigkillWhenTheGraceRunsOut",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"2s", "renew 12s", {"@2s guard 11.9s"}},
      {"3s", "release", {"@3s signal TERM"}},
      {"7s", "", {"@6s signal KILL"}},
      {"7s", "killed 9", {"@7s ready-to-release"}}}},
    {"ReleaseWithExitOnLossExits3AfterTheGroupIsGone",
     RestartPolicy::kNever,
     true,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"3s", "release", {"@3s signal TERM"}},
      {"3.5s", "exit 0", {"@3.5s finish 3"}}}},
    {"ReleaseWhileFollowingIsReadyAtOnce",
     RestartPolicy::kNever,
     true,
     {{"0s", "release", {"@0s ready-to-release"}}}},

    // ---- drain and the second signal ----------------------------------------------------------
    {"SigtermDrainsWhileRenewalsGoOnAndExitsWithTheCommandsStatus",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"1s", "signal TERM", {"@1s signal TERM"}},
      {"2s", "renew 12s", {"@2s guard 11.9s"}},
      {"4s", "renew 14s", {"@4s guard 13.9s"}},
      {"5s", "exit 0", {"@5s finish 0"}}}},
    {"DrainSigkillAtTheDrainTimeout",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"1s", "signal TERM", {"@1s signal TERM"}},
      {"2s", "renew 40s", {"@2s guard 39.9s"}},
      {"27s", "", {"@26s signal KILL"}},
      {"27s", "killed 9", {"@27s finish 137"}}}},
    {"DrainRenewalsFailingCapTheKillAtTheDeadline",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"1s", "signal TERM", {"@1s signal TERM"}},
      {"10s", "", {"@9.9s signal KILL"}},
      {"10s", "killed 9", {"@10s finish 137"}}}},
    {"SigintIsForwardedAsSigint",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"1s", "signal INT", {"@1s signal INT"}},
      {"1.2s", "killed 2", {"@1.2s finish 130"}}}},
    {"SecondSignalSigkillsAtOnceThenFinishes",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"1s", "signal TERM", {"@1s signal TERM"}},
      {"2s", "signal TERM", {"@2s signal KILL"}},
      {"2s", "killed 9", {"@2s finish 137"}}}},
    {"ASignalWhileFollowingFinishesAtOnceWith0",
     RestartPolicy::kNever,
     false,
     {{"0s", "signal TERM", {"@0s finish 0"}}}},
    {"ASignalDuringTheBackoffFinishesWith0",
     RestartPolicy::kAlways,
     false,
     {{"0s", "lead 7 100s", {"@0s start token=7 killBy=99.9s"}},
      {"1s", "exit 1", {}},
      {"1.5s", "signal TERM", {"@1.5s finish 0"}},
      {"5s", "", {}}}},
    {"ASignalDuringAReleaseStopKeepsItsGraceAndFinishesOnceGone",
     RestartPolicy::kNever,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"2s", "release", {"@2s signal TERM"}},
      {"3s", "signal TERM", {}},
      {"6s", "", {"@5s signal KILL"}},
      {"6s", "killed 9", {"@6s finish 137"}}}},

    // ---- abort --------------------------------------------------------------------------------
    {"AbortSigkillsAtOnceAndFinishesWith70",
     RestartPolicy::kAlways,
     false,
     {{"0s", "lead 7 10s", {"@0s start token=7 killBy=9.9s"}},
      {"1s", "abort", {"@1s signal KILL"}},
      {"1s", "killed 9", {"@1s finish 70"}}}},
};

INSTANTIATE_TEST_SUITE_P(Scripts, SupervisorScriptTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(SupervisorTest, TheCommandGetsItsArgvAndTheTermInItsEnvironment) {
  auto& s = make();
  launcher_.expect({"@0s start token=42 killBy=9.9s"});
  s.leading(42, origin_ + 10s);
  launcher_.verifyAllCame("start");
  EXPECT_EQ(launcher_.lastArgv(), (std::vector<std::string>{"my-job", "--flag"}));
  EXPECT_EQ(launcher_.lastEnv(), (Environment{{"LEASEHOLD_FENCING_TOKEN", "42"},
                                              {"LEASEHOLD_LEASE", "ns/lease"},
                                              {"LEASEHOLD_IDENTITY", "web-0_1234abcd"}}));
  EXPECT_TRUE(s.commandRunning());
  EXPECT_EQ(s.commandPid(), 100);
}

TEST_F(SupervisorTest, NothingAfterFinishing) {
  auto& s = make();
  launcher_.expect({"@0s finish 0"});
  s.shutdown(SIGTERM);
  launcher_.verifyAllCame("first signal");
  EXPECT_TRUE(s.finished());
  // Everything after finish() is the rest of leasehold's business.
  launcher_.expect({});
  s.leading(7, origin_ + 10s);
  s.release();
  s.shutdown(SIGTERM);
  s.lost();
  clock_.advance(60s);
  launcher_.verifyAllCame("after finish");
}

// Shard mode (leasehold run --shards N): the shard's environment after the term's, and a
// shard moved away by rebalancing (a release) is not a lost term for --exit-on-loss.
TEST_F(SupervisorTest, ShardModeAddsItsEnvironmentAndAReleaseIsNotALoss) {
  SupervisorConfig config;
  config.command = {"my-job"};
  config.lease = "ns/work-3";
  config.identity = "web-0_1234abcd";
  config.killGrace = 3s;
  config.exitOnLoss = true;
  config.exitOnRelease = false;
  config.extraEnv = {{"LEASEHOLD_SHARD", "3"}, {"LEASEHOLD_SHARDS", "8"}};
  SupervisorHooks hooks{[this] { launcher_.call("ready-to-release"); },
                        [this](int code) { launcher_.call("finish " + std::to_string(code)); }};
  supervisor_ = std::make_unique<Supervisor>(clock_, launcher_, config, hooks, logger_);
  auto& s = *supervisor_;
  launcher_.expect({"@0s start token=5 killBy=9.9s"});
  s.leading(5, origin_ + 10s);
  launcher_.verifyAllCame("start");
  EXPECT_EQ(launcher_.lastEnv(), (Environment{{"LEASEHOLD_FENCING_TOKEN", "5"},
                                              {"LEASEHOLD_LEASE", "ns/work-3"},
                                              {"LEASEHOLD_IDENTITY", "web-0_1234abcd"},
                                              {"LEASEHOLD_SHARD", "3"},
                                              {"LEASEHOLD_SHARDS", "8"}}));
  launcher_.expect({"@0s signal TERM"});
  s.release();
  launcher_.verifyAllCame("release");
  launcher_.expect({"@1s ready-to-release"});
  clock_.advance(1s);
  launcher_.groupExits(ExitStatus::exited(0));
  launcher_.verifyAllCame("group gone");
  // Released, not finished: the shard's next term starts the command again.
  launcher_.expect({});
  s.lost();
  launcher_.verifyAllCame("released term ends");
  EXPECT_FALSE(s.finished());
  launcher_.expect({"@21s start token=6 killBy=30.9s"});
  clock_.advance(20s);
  s.leading(6, origin_ + 31s);
  launcher_.verifyAllCame("next term");
  // A lost term still ends leasehold with --exit-on-loss.
  launcher_.expect({"@21s signal TERM"});
  s.lost();
  launcher_.verifyAllCame("lost");
  launcher_.expect({"@21.5s finish 3"});
  clock_.advance(500ms);
  launcher_.groupExits(ExitStatus::exited(0));
  launcher_.verifyAllCame("lost term ends");
}

TEST(SupervisorReapAllowanceTest, IsAHundredMillisecondsOrHalfAShortGrace) {
  EXPECT_EQ(Supervisor::reapAllowance(3s), 100ms);
  EXPECT_EQ(Supervisor::reapAllowance(120ms), 60ms);
}

}  // namespace
}  // namespace leasehold::supervise

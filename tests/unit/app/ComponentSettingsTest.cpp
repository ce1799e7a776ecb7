// What the parsed Config means for the components that do not read it: tables over each
// translation, since a wrong row (a restart policy mapped to its neighbour, a deadline past R)
// would only show in an integration run much later.
#include "app/ComponentSettings.h"

#include <gtest/gtest.h>

#include "etcd/ElectionLockName.h"
#include "kube/LeaseLockName.h"

namespace leasehold::app {
namespace {

using namespace std::chrono_literals;

struct DeadlineCase {
  time::Duration renewDeadline;
  std::chrono::milliseconds want;
};

class RenewalRequestDeadlineTest : public ::testing::TestWithParam<DeadlineCase> {};

TEST_P(RenewalRequestDeadlineTest, IsHalfOfRWithinHalfASecondAndFiveSeconds) {
  election::ElectionTimings t;
  t.renewDeadline = GetParam().renewDeadline;
  EXPECT_EQ(renewalRequestDeadline(t), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(Table, RenewalRequestDeadlineTest,
                         ::testing::Values(DeadlineCase{10s, 5000ms},    // client-go's default R
                                           DeadlineCase{1500ms, 750ms},  // the tests' scaled R
                                           DeadlineCase{4s, 2000ms},     //
                                           DeadlineCase{600ms, 500ms},   // floor
                                           DeadlineCase{45s, 5000ms}));  // ceiling

struct RestartCase {
  config::RestartPolicy from;
  supervise::RestartPolicy want;
};

class SupervisorConfigForTest : public ::testing::TestWithParam<RestartCase> {};

TEST_P(SupervisorConfigForTest, CarriesTheRunSettingsAndTheLeaseName) {
  config::Config cfg;
  cfg.command = {"/bin/app", "--serve"};
  cfg.identity = "web-0_1a2b3c4d";
  cfg.killGrace = 700ms;
  cfg.drainTimeout = 9s;
  cfg.restart = GetParam().from;
  cfg.exitOnLoss = true;
  const auto c = supervisorConfigFor(cfg, kube::leaseLockName("payments", "batch"));
  EXPECT_EQ(c.command, cfg.command);
  EXPECT_EQ(c.lease, "payments/batch");
  EXPECT_EQ(c.identity, "web-0_1a2b3c4d");
  EXPECT_EQ(c.killGrace, 700ms);
  EXPECT_EQ(c.drainTimeout, 9s);
  EXPECT_EQ(c.restart, GetParam().want);
  EXPECT_TRUE(c.exitOnLoss);
}

TEST(SupervisorConfigFor, OnEtcdTheLeaseIsTheElectionName) {
  config::Config cfg;
  cfg.command = {"/bin/app"};
  // etcd has no namespace: the election's name alone.
  EXPECT_EQ(supervisorConfigFor(cfg, etcd::electionLockName("jobs/scheduler")).lease,
            "jobs/scheduler");
}

INSTANTIATE_TEST_SUITE_P(Policies, SupervisorConfigForTest,
                         ::testing::Values(RestartCase{config::RestartPolicy::Never,
                                                       supervise::RestartPolicy::kNever},
                                           RestartCase{config::RestartPolicy::OnFailure,
                                                       supervise::RestartPolicy::kOnFailure},
                                           RestartCase{config::RestartPolicy::Always,
                                                       supervise::RestartPolicy::kAlways}));

struct LevelCase {
  config::LogLevel from;
  log::Level lowestShown;
};

class LoggerForTest : public ::testing::TestWithParam<LevelCase> {};

TEST_P(LoggerForTest, ShowsTheConfiguredLevelAndAbove) {
  config::Config cfg;
  cfg.logLevel = GetParam().from;
  const log::Logger logger = loggerFor(cfg);
  for (const auto level :
       {log::Level::kDebug, log::Level::kInfo, log::Level::kWarn, log::Level::kError}) {
    EXPECT_EQ(logger.enabled(level), level >= GetParam().lowestShown) << static_cast<int>(level);
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, LoggerForTest,
                         ::testing::Values(LevelCase{config::LogLevel::Debug, log::Level::kDebug},
                                           LevelCase{config::LogLevel::Info, log::Level::kInfo},
                                           LevelCase{config::LogLevel::Warn, log::Level::kWarn},
                                           LevelCase{config::LogLevel::Error, log::Level::kError}));

}  // namespace
}  // namespace leasehold::app

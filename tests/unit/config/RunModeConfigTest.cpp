// `leasehold run [flags] -- CMD [ARGS...]`: the command after --, run mode's settings from
// flags, environment and file, their defaults, and the combinations that are rejected (each
// message names the flags and where their values came from).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ConfigLoaderFixture.h"
#include "config/ConfigLoader.h"
#include "config/ConfigPrinter.h"

namespace leasehold::config {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;
using Args = std::vector<std::string>;

TEST_F(ConfigLoaderTest, RunTakesEverythingAfterTheFirstDashesAsTheCommand) {
  const auto config =
      loaded({"run", "--lease-name", "job", "--", "sh", "-c", "x --lease-name y", "--", "-v"});
  EXPECT_TRUE(config.runMode);
  EXPECT_EQ(config.leaseName, "job");
  EXPECT_EQ(config.command, (Args{"sh", "-c", "x --lease-name y", "--", "-v"}));
}

TEST_F(ConfigLoaderTest, SidecarModeIsNotRunMode) {
  const auto config = loaded({"--lease-name", "job"});
  EXPECT_FALSE(config.runMode);
  EXPECT_TRUE(config.command.empty());
}

TEST_F(ConfigLoaderTest, RunModeDefaults) {
  const auto config = loaded({"run", "--lease-name", "job", "--", "true"});
  EXPECT_EQ(config.killGrace, 5s);
  EXPECT_EQ(config.drainTimeout, 25s);
  EXPECT_EQ(config.restart, RestartPolicy::Never);
  EXPECT_FALSE(config.exitOnLoss);
  // A short renew deadline gets half of it as the grace.
  EXPECT_EQ(loaded({"run", "--lease-name", "job", "--lease-duration", "4s", "--renew-deadline",
                    "3s", "--retry-period", "1s", "--", "true"})
                .killGrace,
            1500ms);
}

// The command is stopped kill-grace before the claim ends: in run mode a renewal that fails at
// --renew-interval must leave a retry before R - kill-grace, not only before R.
TEST_F(ConfigLoaderTest, RunModeRenewIntervalLeavesTheKillGrace) {
  const auto fits = loaded({"run", "--lease-name", "job", "--lease-duration", "60s",
                            "--renew-deadline", "40s", "--renew-interval", "15s", "--", "true"});
  EXPECT_EQ(fits.timings.renewEvery(), 15s);
  EXPECT_THAT(failure({"run", "--lease-name", "job", "--lease-duration", "60s", "--renew-deadline",
                       "40s", "--renew-interval", "30s", "--kill-grace", "5s", "--", "true"}),
              HasSubstr("--renew-interval (30s) + the request timeout (5s) + --retry-period (2s) "
                        "must be at most --renew-deadline - --kill-grace (35s) in run mode"));
}

TEST_F(ConfigLoaderTest, EveryRunFlag) {
  const auto config = loaded({"run", "--lease-name", "job", "--kill-grace", "2s", "--drain-timeout",
                              "40s", "--restart", "on-failure", "--exit-on-loss", "--", "true"});
  EXPECT_EQ(config.killGrace, 2s);
  EXPECT_EQ(config.drainTimeout, 40s);
  EXPECT_EQ(config.restart, RestartPolicy::OnFailure);
  EXPECT_TRUE(config.exitOnLoss);
}

TEST_F(ConfigLoaderTest, RunSettingsFromEnvironmentAndFile) {
  const auto file = dir_.write("run.yaml",
                               "leaseName: job\ndrainTimeout: 10s\nexitOnLoss: true\n"
                               "restart: on-failure\n");
  const auto config = loaded({"run", "--config", file.string(), "--", "true"},
                             {{"LEASEHOLD_KILL_GRACE", "1s"}, {"LEASEHOLD_RESTART", "always"}});
  EXPECT_EQ(config.killGrace, 1s);
  EXPECT_EQ(config.drainTimeout, 10s);
  EXPECT_EQ(config.restart, RestartPolicy::Always) << "the environment beats the file";
  EXPECT_TRUE(config.exitOnLoss);
}

struct RejectedCase {
  const char* name;
  Args args;
  ConfigLoader::Environment env;
  const char* message;
};

void PrintTo(const RejectedCase& c, std::ostream* os) {
  *os << c.name;
}

class RunModeRejected : public ConfigLoaderTest,
                        public testing::WithParamInterface<RejectedCase> {};

TEST_P(RunModeRejected, NamingTheFlags) {
  const auto& c = GetParam();
  EXPECT_THAT(failure(c.args, c.env), HasSubstr(c.message));
}

INSTANTIATE_TEST_SUITE_P(
    Table, RunModeRejected,
    testing::Values(
        RejectedCase{"NoDashes", {"run", "--lease-name", "job"}, {}, "no command after --"},
        RejectedCase{
            "NothingAfterDashes", {"run", "--lease-name", "job", "--"}, {}, "no command after --"},
        RejectedCase{
            "EmptyCommand", {"run", "--lease-name", "job", "--", ""}, {}, "no command after --"},
        RejectedCase{"GraceNotLessThanTheRenewDeadline",
                     {"run", "--lease-name", "job", "--kill-grace", "10s", "--", "true"},
                     {},
                     "--kill-grace must be less than --renew-deadline: 10s is not less than 10s"},
        RejectedCase{"GraceFromTheEnvironmentNamesIt",
                     {"run", "--lease-name", "job", "--renew-deadline", "8s", "--", "true"},
                     {{"LEASEHOLD_KILL_GRACE", "9s"}},
                     "--kill-grace (from LEASEHOLD_KILL_GRACE) must be less than "
                     "--renew-deadline: 9s is not less than 8s"},
        RejectedCase{"ZeroGrace",
                     {"run", "--lease-name", "job", "--kill-grace", "0s", "--", "true"},
                     {},
                     "--kill-grace: must be more than 0"},
        RejectedCase{"ZeroDrain",
                     {"run", "--lease-name", "job", "--drain-timeout", "0s", "--", "true"},
                     {},
                     "--drain-timeout: must be more than 0"},
        RejectedCase{"UnknownRestartPolicy",
                     {"run", "--lease-name", "job", "--restart", "sometimes", "--", "true"},
                     {},
                     "--restart: \"sometimes\" is not one of never, on-failure, always"},
        RejectedCase{"RunFlagWithoutRun",
                     {"--lease-name", "job", "--kill-grace", "1s"},
                     {},
                     "--kill-grace: only for leasehold run [flags] -- CMD [ARGS...]"},
        RejectedCase{"RunSettingInTheEnvironmentWithoutRun",
                     {"--lease-name", "job"},
                     {{"LEASEHOLD_EXIT_ON_LOSS", "true"}},
                     "--exit-on-loss (from LEASEHOLD_EXIT_ON_LOSS): only for leasehold run"},
        RejectedCase{"ACommandWithoutRun",
                     {"--lease-name", "job", "--", "true"},
                     {},
                     "a command after -- needs run mode: leasehold run [flags] -- CMD"},
        RejectedCase{"TheElectionTimingsStillApply",
                     {"run", "--lease-name", "job", "--renew-deadline", "20s", "--", "true"},
                     {},
                     "--renew-deadline"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(ConfigLoaderTest, RunModeSettingsInTheFileWithoutRunAreRejectedWithTheLine) {
  const auto file = dir_.write("c.yaml", "leaseName: job\nkillGrace: 1s\n");
  EXPECT_THAT(failure({"--config", file.string()}),
              HasSubstr("--kill-grace (from config " + file.string() +
                        ":2: killGrace): only for leasehold run"));
}

TEST_F(ConfigLoaderTest, HelpListsTheRunModeFlags) {
  const auto outcome = load({"run", "--help"});
  ASSERT_TRUE(std::holds_alternative<HelpRequested>(outcome));
  const auto& text = std::get<HelpRequested>(outcome).text;
  EXPECT_THAT(text, HasSubstr("Run mode: leasehold run [flags] -- CMD [ARGS...]"));
  for (const char* flag : {"--kill-grace", "--drain-timeout", "--restart", "--exit-on-loss"})
    EXPECT_THAT(text, HasSubstr(flag));
}

TEST_F(ConfigLoaderTest, PrintConfigInRunModeShowsItsSettingsButNotTheCommand) {
  const auto config = loaded({"run", "--lease-name", "job", "--kill-grace", "1500ms", "--restart",
                              "always", "--", "my-job", "--password", "hunter2"});
  const auto text = printConfig(config);
  EXPECT_THAT(text, HasSubstr("killGrace: 1.5s\ndrainTimeout: 25s\nrestart: always\n"
                              "exitOnLoss: false\n"));
  EXPECT_EQ(text.find("hunter2"), std::string::npos) << text;
  // It loads back as the same run-mode settings.
  const auto file = dir_.write("printed.yaml", text);
  const auto back = loaded({"run", "--config", file.string(), "--", "my-job"});
  EXPECT_EQ(back.killGrace, 1500ms);
  EXPECT_EQ(back.restart, RestartPolicy::Always);
  EXPECT_FALSE(back.exitOnLoss);
  // Sidecar mode prints none of them.
  EXPECT_EQ(printConfig(loaded({"--lease-name", "job"})).find("killGrace"), std::string::npos);
}

}  // namespace
}  // namespace leasehold::config

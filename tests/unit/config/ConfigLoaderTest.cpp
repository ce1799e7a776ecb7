#include "config/ConfigLoader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ConfigLoaderFixture.h"

namespace leasehold::config {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;
using testing::Not;

TEST_F(ConfigLoaderTest, Defaults) {
  const auto config = loaded({"--lease-name", "my-app"});
  EXPECT_EQ(config.leaseName, "my-app");
  EXPECT_FALSE(config.leaseNamespace);
  EXPECT_EQ(config.identity, "node-7_3f9a1c2b");
  EXPECT_EQ(config.timings.leaseDuration, 15s);
  EXPECT_EQ(config.timings.renewDeadline, 10s);
  EXPECT_EQ(config.timings.retryPeriod, 2s);
  EXPECT_EQ(config.releaseCooldown, 15s);
  EXPECT_EQ(config.httpAddress, (ListenAddress{"127.0.0.1", 4040}));
  EXPECT_EQ(config.probeAddress, (ListenAddress{"0.0.0.0", 9102}));
  EXPECT_EQ(config.statusFile, "");
  EXPECT_EQ(config.podLabel, "");
  EXPECT_FALSE(config.kubeconfig);
  EXPECT_FALSE(config.context);
  EXPECT_FALSE(config.configFile);
  EXPECT_EQ(config.logFormat, LogFormat::Text);
  EXPECT_EQ(config.logLevel, LogLevel::Info);
  EXPECT_EQ(config.followerMode, FollowerMode::Watch);
  EXPECT_FALSE(config.printConfig);
}

TEST_F(ConfigLoaderTest, EveryFlag) {
  const auto config = loaded({"--lease-name=db-primary",
                              "--lease-namespace",
                              "prod",
                              "--identity",
                              "me",
                              "--lease-duration",
                              "30s",
                              "--renew-deadline",
                              "20s",
                              "--retry-period",
                              "5s",
                              "--release-cooldown",
                              "1m",
                              "--kubeconfig",
                              "/k",
                              "--context",
                              "ctx",
                              "--http-address",
                              "[::1]:8080",
                              "--probe-address",
                              "10.0.0.1:9000",
                              "--status-file",
                              "/run/leader.json",
                              "--pod-label",
                              "example.com/leader",
                              "--follower-mode",
                              "poll",
                              "--log-format",
                              "json",
                              "--log-level",
                              "debug",
                              "--print-config"});
  EXPECT_EQ(config.leaseName, "db-primary");
  EXPECT_EQ(config.leaseNamespace, "prod");
  EXPECT_EQ(config.identity, "me");
  EXPECT_EQ(config.timings.leaseDuration, 30s);
  EXPECT_EQ(config.timings.renewDeadline, 20s);
  EXPECT_EQ(config.timings.retryPeriod, 5s);
  EXPECT_EQ(config.releaseCooldown, 1min);
  EXPECT_EQ(config.kubeconfig, "/k");
  EXPECT_EQ(config.context, "ctx");
  EXPECT_EQ(config.httpAddress, (ListenAddress{"::1", 8080}));
  EXPECT_EQ(config.probeAddress, (ListenAddress{"10.0.0.1", 9000}));
  EXPECT_EQ(config.statusFile, "/run/leader.json");
  EXPECT_EQ(config.podLabel, "example.com/leader");
  EXPECT_EQ(config.followerMode, FollowerMode::Poll);
  EXPECT_EQ(config.logFormat, LogFormat::Json);
  EXPECT_EQ(config.logLevel, LogLevel::Debug);
  EXPECT_TRUE(config.printConfig);
}

TEST_F(ConfigLoaderTest, IdentityFromPodName) {
  EXPECT_EQ(loaded({"--lease-name", "a"}, {{"POD_NAME", "web-0"}}).identity, "web-0_3f9a1c2b");
}

// What the Lease shows as this replica's pod, and so what /leader's "name" says when it leads.
TEST_F(ConfigLoaderTest, PodNameIsPodNameElseTheHostnameUnlessAnIdentityIsGiven) {
  EXPECT_EQ(loaded({"--lease-name", "a"}, {{"POD_NAME", "web-0"}}).podName, "web-0");
  // Kubernetes sets the hostname to the pod name: what contrib's image passed as --id.
  EXPECT_EQ(loaded({"--lease-name", "a"}).podName, "node-7");
  EXPECT_EQ(loaded({"--lease-name", "a", "--identity", "me"}).podName, "")
      << "a given identity stands for the replica";
  EXPECT_EQ(loaded({"--lease-name", "a", "--identity", "me"}, {{"POD_NAME", "web-0"}}).podName,
            "web-0");
}

TEST_F(ConfigLoaderTest, EnvironmentNames) {
  EXPECT_EQ(ConfigLoader::environmentName("lease-name"), "LEASEHOLD_LEASE_NAME");
  EXPECT_EQ(ConfigLoader::environmentName("print-config"), "LEASEHOLD_PRINT_CONFIG");
}

// Which source wins, for every combination of sources that set --lease-duration.
struct PrecedenceCase {
  bool flag, env, file;
  std::chrono::seconds expected;
};

class ConfigPrecedence : public ConfigLoaderTest,
                         public testing::WithParamInterface<PrecedenceCase> {};

TEST_P(ConfigPrecedence, FlagsBeatEnvironmentBeatsFileBeatsDefault) {
  const auto& c = GetParam();
  std::vector<std::string> args{"--lease-name", "a", "--renew-deadline", "5s"};
  ConfigLoader::Environment env;
  if (c.flag) args.insert(args.end(), {"--lease-duration", "40s"});
  if (c.env) env["LEASEHOLD_LEASE_DURATION"] = "30s";
  if (c.file) {
    args.insert(args.end(), {"--config", dir_.write("c.yaml", "leaseDuration: 20s\n").string()});
  }
  EXPECT_EQ(loaded(args, env).timings.leaseDuration, c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ConfigPrecedence,
    testing::Values(PrecedenceCase{false, false, false, 15s},
                    PrecedenceCase{false, false, true, 20s},
                    PrecedenceCase{false, true, false, 30s}, PrecedenceCase{false, true, true, 30s},
                    PrecedenceCase{true, false, false, 40s}, PrecedenceCase{true, false, true, 40s},
                    PrecedenceCase{true, true, false, 40s}, PrecedenceCase{true, true, true, 40s}));

TEST_F(ConfigLoaderTest, SourcesMixPerSetting) {
  const auto file = dir_.write("c.yaml",
                               "leaseName: from-file\nleaseNamespace: file-ns\nlogLevel: warn\n"
                               "followerMode: poll\nprintConfig: true\n");
  const auto config = loaded({"--config", file.string(), "--log-level", "error"},
                             {{"LEASEHOLD_LEASE_NAMESPACE", "env-ns"}});
  EXPECT_EQ(config.leaseName, "from-file");
  EXPECT_EQ(config.leaseNamespace, "env-ns");
  EXPECT_EQ(config.logLevel, LogLevel::Error);
  EXPECT_EQ(config.followerMode, FollowerMode::Poll);
  EXPECT_TRUE(config.printConfig);
  EXPECT_EQ(config.configFile, file.string());
}

TEST_F(ConfigLoaderTest, ConfigFileFromEnvironmentAndFlagWins) {
  const auto fromEnv = dir_.write("env.yaml", "leaseName: env-file\n");
  const auto fromFlag = dir_.write("flag.yaml", "leaseName: flag-file\n");
  EXPECT_EQ(loaded({}, {{"LEASEHOLD_CONFIG", fromEnv.string()}}).leaseName, "env-file");
  EXPECT_EQ(
      loaded({"--config", fromFlag.string()}, {{"LEASEHOLD_CONFIG", fromEnv.string()}}).leaseName,
      "flag-file");
}

TEST_F(ConfigLoaderTest, EmptyEnvironmentValueCountsAsUnset) {
  EXPECT_EQ(loaded({"--lease-name", "a"}, {{"LEASEHOLD_LOG_LEVEL", ""}}).logLevel, LogLevel::Info);
}

TEST_F(ConfigLoaderTest, NullInFileCountsAsUnset) {
  const auto file = dir_.write("c.yaml", "leaseName: a\nleaseNamespace:\nretryPeriod: ~\n");
  const auto config = loaded({"--config", file.string()});
  EXPECT_FALSE(config.leaseNamespace);
  EXPECT_EQ(config.timings.retryPeriod, 2s);
}

TEST_F(ConfigLoaderTest, UnknownKeyNamesFileLineAndSuggests) {
  const auto file = dir_.write("c.yaml", "leaseName: a\n\nleaseDurtion: 20s\nbogus: 1\n");
  const auto message = failure({"--config", file.string()});
  EXPECT_THAT(message, HasSubstr("config " + file.string() +
                                 ":3: leaseDurtion: unknown key (did you mean leaseDuration?)"));
  EXPECT_THAT(message, HasSubstr("config " + file.string() + ":4: bogus: unknown key"));
}

TEST_F(ConfigLoaderTest, FlagOnlySettingsAreUnknownInTheFile) {
  const auto file = dir_.write("c.yaml", "leaseName: a\nversion: true\nconfig: /x\n");
  const auto message = failure({"--config", file.string()});
  EXPECT_THAT(message, HasSubstr(":2: version: unknown key"));
  EXPECT_THAT(message, HasSubstr(":3: config: unknown key"));
}

TEST_F(ConfigLoaderTest, WrongTypeInFile) {
  const auto file = dir_.write("c.yaml",
                               "leaseName:\n  - a\n  - b\nprintConfig: {x: 1}\n"
                               "retryPeriod: [1s]\n");
  const auto message = failure({"--config", file.string()});
  EXPECT_THAT(message, HasSubstr("config " + file.string() +
                                 ":1: leaseName: expected a string, got a list"));
  EXPECT_THAT(message, HasSubstr(":4: printConfig: expected true or false, got a map"));
  EXPECT_THAT(message, HasSubstr(":5: retryPeriod: expected a duration such as 15s, got a list"));
}

TEST_F(ConfigLoaderTest, BadDurationInFileNamesKeyAndLine) {
  const auto file = dir_.write("c.yaml", "leaseName: a\nretryPeriod: 2\nleaseDuration: soon\n");
  const auto message = failure({"--config", file.string()});
  EXPECT_THAT(message, HasSubstr("config " + file.string() +
                                 ":2: retryPeriod: invalid duration \"2\": missing unit"));
  EXPECT_THAT(message, HasSubstr(":3: leaseDuration: invalid duration \"soon\""));
  // The rejected values are not compared with each other as well.
  EXPECT_THAT(message, Not(HasSubstr("must be greater")));
}

TEST_F(ConfigLoaderTest, BadValuesNameTheirSource) {
  EXPECT_THAT(failure({"--lease-name", "a", "--retry-period", "-1s"}),
              HasSubstr("--retry-period: invalid duration \"-1s\": must not be negative"));
  EXPECT_THAT(failure({"--lease-name", "a"}, {{"LEASEHOLD_LOG_FORMAT", "xml"}}),
              HasSubstr("LEASEHOLD_LOG_FORMAT: \"xml\" is not one of text, json"));
  EXPECT_THAT(failure({"--lease-name", "a", "--log-level", "trace"}),
              HasSubstr("--log-level: \"trace\" is not one of debug, info, warn, error"));
  EXPECT_THAT(failure({"--lease-name", "a", "--follower-mode", "push"}),
              HasSubstr("--follower-mode: \"push\" is not one of watch, poll"));
  EXPECT_THAT(failure({"--lease-name", "a", "--http-address", "4040"}),
              HasSubstr("--http-address: \"4040\" is not a valid host:port"));
  EXPECT_THAT(failure({"--lease-name", "a"}, {{"LEASEHOLD_PROBE_ADDRESS", "::1:9102"}}),
              HasSubstr("LEASEHOLD_PROBE_ADDRESS: \"::1:9102\" is not a valid host:port: put an "
                        "IPv6 address in brackets"));
  EXPECT_THAT(failure({"--lease-name", "a"}, {{"LEASEHOLD_PRINT_CONFIG", "maybe"}}),
              HasSubstr("LEASEHOLD_PRINT_CONFIG: \"maybe\" is not a boolean"));
}

// --print-config writes YAML, which is Unicode: a value with stray bytes could not be printed
// back as given (the file had this check; flags and the environment did not).
TEST_F(ConfigLoaderTest, ValuesMustBeUtf8WhateverTheirSource) {
  EXPECT_EQ(failure({"--lease-name", "a", "--identity", "web-\xff"}),
            "--identity: not valid UTF-8");
  EXPECT_EQ(failure({"--lease-name", "a"}, {{"LEASEHOLD_STATUS_FILE", "/tmp/\xc3(.json"}}),
            "LEASEHOLD_STATUS_FILE: not valid UTF-8");
  EXPECT_EQ(failure({"--lease-name", "a", "--identity", "\xed\xa0\x80"}),  // a surrogate
            "--identity: not valid UTF-8");
  EXPECT_EQ(failure({}, {{"LEASEHOLD_LEASE_NAME", "\xc0\xae"}}),  // an overlong '.'
            "LEASEHOLD_LEASE_NAME: not valid UTF-8");
  EXPECT_EQ(loaded({"--lease-name", "a", "--identity", "web-\xc3\xa9"}).identity, "web-\xc3\xa9");
}

TEST_F(ConfigLoaderTest, BooleanFromEnvironment) {
  EXPECT_TRUE(loaded({"--lease-name", "a"}, {{"LEASEHOLD_PRINT_CONFIG", "true"}}).printConfig);
  EXPECT_FALSE(loaded({"--lease-name", "a"}, {{"LEASEHOLD_PRINT_CONFIG", "0"}}).printConfig);
}

TEST_F(ConfigLoaderTest, LeaseNameRequiredAndValidated) {
  EXPECT_THAT(failure({}), HasSubstr("--lease-name is required"));
  EXPECT_THAT(failure({"--lease-name", "My_App"}),
              HasSubstr("--lease-name: \"My_App\" must consist of lowercase"));
  EXPECT_THAT(failure({}, {{"LEASEHOLD_LEASE_NAME", "-x"}}),
              HasSubstr("--lease-name (from LEASEHOLD_LEASE_NAME): \"-x\""));
  EXPECT_THAT(failure({"--lease-name", "a", "--lease-namespace", "a.b"}),
              HasSubstr("--lease-namespace: \"a.b\""));
  EXPECT_THAT(failure({"--lease-name", "a", "--pod-label", "bad key"}),
              HasSubstr("--pod-label: \"bad key\" is not a valid label key"));
  const auto file = dir_.write("c.yaml", "identity: \"\"\n");
  EXPECT_THAT(
      failure({"--lease-name", "a", "--config", file.string()}),
      HasSubstr("--identity (from config " + file.string() + ":1: identity): must not be empty"));
}

TEST_F(ConfigLoaderTest, TimingValidationNamesFlags) {
  const auto message = failure({"--lease-name", "a", "--renew-deadline", "20s"});
  EXPECT_THAT(message,
              HasSubstr("--lease-duration (15s) must be greater than --renew-deadline (20s)"));
  EXPECT_THAT(failure({"--lease-name", "a", "--retry-period", "9s"}),
              HasSubstr("--renew-deadline (10s) must be greater than 1.2 x --retry-period (9s)"));
  EXPECT_THAT(failure({"--lease-name", "a", "--lease-duration", "15500ms"}),
              HasSubstr("whole number of seconds"));
}

TEST_F(ConfigLoaderTest, RenewIntervalDefaultsToTheRetryPeriodAndIsChecked) {
  EXPECT_EQ(loaded({"--lease-name", "a"}).timings.renewInterval, std::nullopt);
  EXPECT_EQ(loaded({"--lease-name", "a", "--retry-period", "1s"}).timings.renewEvery(), 1s);
  const auto longer = loaded({"--lease-name", "a", "--lease-duration", "60s", "--renew-deadline",
                              "40s", "--renew-interval", "15s"});
  EXPECT_EQ(longer.timings.renewEvery(), 15s);
  EXPECT_THAT(failure({"--lease-name", "a", "--renew-interval", "4s"}),
              AllOf(HasSubstr("--renew-interval (4s) + the request timeout (5s, half of"),
                    HasSubstr("+ --retry-period (2s) must be at most --renew-deadline (10s)")));
  EXPECT_THAT(failure({"--lease-name", "a", "--renew-interval", "soon"}),
              HasSubstr("--renew-interval: invalid duration \"soon\""));
}

TEST_F(ConfigLoaderTest, ReleaseCooldownFollowsLeaseDuration) {
  EXPECT_EQ(loaded({"--lease-name", "a", "--lease-duration", "30s"}).releaseCooldown, 30s);
  EXPECT_EQ(loaded({"--lease-name", "a", "--release-cooldown", "0"}).releaseCooldown, 0s);
}

TEST_F(ConfigLoaderTest, AllProblemsAreReportedTogether) {
  const auto message = failure({"--lease-name", "A", "--log-format", "xml", "--retry-period", "x"});
  EXPECT_THAT(message, HasSubstr("--lease-name"));
  EXPECT_THAT(message, HasSubstr("--log-format"));
  EXPECT_THAT(message, HasSubstr("--retry-period"));
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 2);
}

TEST_F(ConfigLoaderTest, HelpAndVersionAreOutcomes) {
  const auto help = load({"--help"});
  ASSERT_TRUE(std::holds_alternative<HelpRequested>(help));
  const auto& text = std::get<HelpRequested>(help).text;
  for (const char* flag :
       {"--lease-name",       "--lease-namespace", "--identity",    "--lease-duration",
        "--renew-deadline",   "--retry-period",    "--kubeconfig",  "--context",
        "--http-address",     "--probe-address",   "--status-file", "--pod-label",
        "--config",           "--log-format",      "--log-level",   "--follower-mode",
        "--release-cooldown", "--print-config",    "--version",     "LEASEHOLD_",
        "--renew-interval"}) {
    EXPECT_THAT(text, HasSubstr(flag));
  }
  EXPECT_TRUE(std::holds_alternative<HelpRequested>(load({"-h"})));
  // --version needs nothing else to be valid.
  EXPECT_TRUE(std::holds_alternative<VersionRequested>(load({"--version"})));
}

TEST_F(ConfigLoaderTest, CommandLineMistakes) {
  EXPECT_THAT(failure({"--lease-name", "a", "--leese-name", "b"}), HasSubstr("--leese-name"));
  EXPECT_THAT(failure({"--lease-name", "a", "stray"}), HasSubstr("stray"));
  EXPECT_THAT(failure({"--lease-name"}), HasSubstr("lease-name"));
}

TEST_F(ConfigLoaderTest, MissingOrBrokenConfigFile) {
  EXPECT_THAT(failure({"--config", (dir_.path() / "missing.yaml").string()}),
              HasSubstr("config " + (dir_.path() / "missing.yaml").string() + ": cannot read"));
  const auto broken = dir_.write("broken.yaml", "leaseName: a\n  bad: indent\n");
  EXPECT_THAT(failure({"--config", broken.string()}),
              HasSubstr("config " + broken.string() + ":2"));
}

TEST_F(ConfigLoaderTest, ArgcArgv) {
  const char* argv[] = {"leasehold", "--lease-name", "a", "--retry-period", "1s"};
  const auto outcome = ConfigLoader({}, fixedIdentity()).load(5, argv);
  ASSERT_TRUE(std::holds_alternative<Config>(outcome));
  EXPECT_EQ(std::get<Config>(outcome).timings.retryPeriod, 1s);
}

TEST_F(ConfigLoaderTest, SystemIdentitySourcesWork) {
  const auto sources = ConfigLoader::systemIdentitySources();
  EXPECT_FALSE(sources.hostname().empty());
  const auto identity = ConfigLoader({}).load({"--lease-name", "a"});
  ASSERT_TRUE(std::holds_alternative<Config>(identity));
  EXPECT_THAT(std::get<Config>(identity).identity, testing::MatchesRegex(".+_[0-9a-f]{8}"));
}

}  // namespace
}  // namespace leasehold::config

// The flag names of contrib's leader-elector, k8s-elector, nais/elector and client-go: each one
// from a flag, the environment and the YAML file; conflicts with the leasehold flag; --ttl's
// rule; the lock types and --leader-elect values that are refused.
#include "config/CompatibilityFlags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "ConfigLoaderFixture.h"
#include "config/DurationParser.h"

namespace leasehold::config {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;

struct AliasCase {
  std::string flag;
  std::string value;
  std::function<void(const Config&)> expect;
};

std::ostream& operator<<(std::ostream& out, const AliasCase& c) {
  return out << "--" << c.flag << "=" << c.value;
}

const CompatibilityFlag& compatible(const std::string& flag) {
  for (const auto& c : compatibilityFlags()) {
    if (c.flag == flag) return c;
  }
  throw std::logic_error("no compatibility flag " + flag);
}

const std::vector<AliasCase>& aliasCases() {
  static const std::vector<AliasCase> cases = {
      {"election", "my-app", [](const Config& c) { EXPECT_EQ(c.leaseName, "my-app"); }},
      {"election-namespace", "prod", [](const Config& c) { EXPECT_EQ(c.leaseNamespace, "prod"); }},
      {"namespace", "prod", [](const Config& c) { EXPECT_EQ(c.leaseNamespace, "prod"); }},
      {"id", "web-0",
       [](const Config& c) {
         EXPECT_EQ(c.identity, "web-0");
         EXPECT_EQ(c.podName, "") << "a given identity stands for the replica, as contrib's did";
       }},
      {"http", "0.0.0.0:4040",
       [](const Config& c) {
         EXPECT_EQ(c.httpAddress, (ListenAddress{"0.0.0.0", 4040}));
       }},
      {"http", ":6060",
       [](const Config& c) {
         EXPECT_EQ(c.httpAddress, (ListenAddress{"0.0.0.0", 6060}));
       }},
      {"ttl", "10s",
       [](const Config& c) {
         EXPECT_EQ(c.timings.leaseDuration, 10s);
         EXPECT_EQ(c.timings.renewDeadline, 5s);
         EXPECT_EQ(c.timings.retryPeriod, 2500ms);
         EXPECT_EQ(c.releaseCooldown, 10s);
       }},
      {"ttl", "1500ms",
       [](const Config& c) {
         EXPECT_EQ(c.timings.leaseDuration, 2s) << "rounded up: the Lease stores seconds";
         EXPECT_EQ(c.timings.renewDeadline, 1s);
         EXPECT_EQ(c.timings.retryPeriod, 500ms);
       }},
      {"use-cluster-credentials", "true", [](const Config& c) { EXPECT_FALSE(c.kubeconfig); }},
      {"use-cluster-credentials", "false", [](const Config& c) { EXPECT_FALSE(c.kubeconfig); }},
      {"lock-type", "leases", [](const Config& c) { EXPECT_EQ(c.leaseName, "base"); }},
      {"metrics-address", "127.0.0.1:9090",
       [](const Config& c) {
         EXPECT_EQ(c.probeAddress, (ListenAddress{"127.0.0.1", 9090}));
       }},
      {"leader-elect", "true", [](const Config& c) { EXPECT_EQ(c.leaseName, "base"); }},
      {"leader-elect-lease-duration", "20s",
       [](const Config& c) {
         EXPECT_EQ(c.timings.leaseDuration, 20s);
         EXPECT_EQ(c.timings.renewDeadline, 10s) << "client-go's flags are independent";
         EXPECT_EQ(c.timings.retryPeriod, 2s);
       }},
      {"leader-elect-renew-deadline", "8s",
       [](const Config& c) { EXPECT_EQ(c.timings.renewDeadline, 8s); }},
      {"leader-elect-retry-period", "1s",
       [](const Config& c) { EXPECT_EQ(c.timings.retryPeriod, 1s); }},
      {"leader-elect-resource-name", "my-app",
       [](const Config& c) { EXPECT_EQ(c.leaseName, "my-app"); }},
      {"leader-elect-resource-namespace", "prod",
       [](const Config& c) { EXPECT_EQ(c.leaseNamespace, "prod"); }},
      {"leader-elect-resource-lock", "leases",
       [](const Config& c) { EXPECT_EQ(c.leaseName, "base"); }},
  };
  return cases;
}

enum class Where { Flag, Environment, File };

class EveryAlias : public ConfigLoaderTest,
                   public testing::WithParamInterface<std::tuple<AliasCase, Where>> {};

TEST_P(EveryAlias, IsAcceptedFromEverySourceAndSetsItsTarget) {
  const auto& [c, where] = GetParam();
  const auto& flag = compatible(c.flag);
  std::vector<std::string> args;
  if (flag.target != "lease-name") args = {"--lease-name", "base"};
  ConfigLoader::Environment env;
  switch (where) {
    case Where::Flag:
      args.push_back("--" + c.flag + "=" + c.value);
      break;
    case Where::Environment:
      env[ConfigLoader::environmentName(c.flag)] = c.value;
      break;
    case Where::File:
      args.push_back("--config");
      args.push_back(dir_.write("c.yaml", flag.fileKey + ": \"" + c.value + "\"\n").string());
      break;
  }
  c.expect(loaded(args, env));
}

INSTANTIATE_TEST_SUITE_P(Table, EveryAlias,
                         testing::Combine(testing::ValuesIn(aliasCases()),
                                          testing::Values(Where::Flag, Where::Environment,
                                                          Where::File)));

class CompatibilityFlagsTest : public ConfigLoaderTest {};

TEST_F(CompatibilityFlagsTest, EveryCompatibilityFlagHasACaseAboveAndAHelpHeading) {
  std::set<std::string> tested;
  for (const auto& c : aliasCases())
    tested.insert(c.flag);
  for (const auto& flag : compatibilityFlags()) {
    EXPECT_TRUE(tested.contains(flag.flag)) << "--" << flag.flag << " has no case";
    EXPECT_THAT(flag.group, HasSubstr("Compatibility"));
  }
}

TEST_F(CompatibilityFlagsTest, HelpShowsThemUnderTheirOwnHeadings) {
  const auto help = load({"--help"});
  ASSERT_TRUE(std::holds_alternative<HelpRequested>(help));
  const auto& text = std::get<HelpRequested>(help).text;
  const auto contrib = text.find("Compatibility: kubernetes/contrib leader-elector");
  const auto clientGo = text.find("Compatibility: client-go");
  ASSERT_NE(contrib, std::string::npos) << text;
  ASSERT_NE(clientGo, std::string::npos) << text;
  EXPECT_GT(contrib, text.find("--lease-name")) << "after leasehold's own flags";
  for (const auto& flag : compatibilityFlags()) {
    const auto at = text.find("--" + flag.flag + " ");
    ASSERT_NE(at, std::string::npos) << flag.flag;
    EXPECT_GT(at, flag.flag.starts_with("leader-elect") ? clientGo : contrib) << flag.flag;
  }
}

// The contrib image's usual args, as its README and most copies have them.
TEST_F(CompatibilityFlagsTest, ContribCommandLineMeansTheSameToLeasehold) {
  const auto config =
      loaded({"--election=example", "--http=0.0.0.0:4040", "--id=web-0",
              "--election-namespace=election", "--ttl=10s", "--use-cluster-credentials"});
  EXPECT_EQ(config.leaseName, "example");
  EXPECT_EQ(config.leaseNamespace, "election");
  EXPECT_EQ(config.identity, "web-0");
  EXPECT_EQ(config.httpAddress, (ListenAddress{"0.0.0.0", 4040}));
  EXPECT_EQ(config.timings.leaseDuration, 10s);
  EXPECT_EQ(config.timings.renewDeadline, 5s);
  EXPECT_EQ(config.timings.retryPeriod, 2500ms);
}

// k8s-elector's example manifest: Go's flag package, one dash.
TEST_F(CompatibilityFlagsTest, GoStyleSingleDashLongFlags) {
  const auto config = loaded({"-election=example-election", "-http=localhost:4040", "-ttl=3s",
                              "-namespace=default", "-lock-type", "leases"});
  EXPECT_EQ(config.leaseName, "example-election");
  EXPECT_EQ(config.leaseNamespace, "default");
  EXPECT_EQ(config.httpAddress, (ListenAddress{"127.0.0.1", 4040}));
  EXPECT_EQ(config.timings.leaseDuration, 3s);
  EXPECT_EQ(loaded({"-lease-name", "a", "-retry-period=1s"}).timings.retryPeriod, 1s);
  // Unknown single-dash words are still errors, and a value that starts with a dash is not
  // taken for a flag.
  EXPECT_THAT(failure({"-election=a", "-electoin=b"}), HasSubstr("-electoin"));
  EXPECT_THAT(failure({"--lease-name", "a", "--retry-period", "-1s"}),
              HasSubstr("must not be negative"));
}

TEST_F(CompatibilityFlagsTest, AnAliasAndItsFlagWithDifferentValuesNameBoth) {
  EXPECT_EQ(failure({"--election", "a", "--lease-name", "b"}),
            "--lease-name \"b\" and --election \"a\" disagree: both set --lease-name; give one of "
            "them");
  EXPECT_EQ(failure({"--lease-name", "a"}, {{"LEASEHOLD_HTTP", "0.0.0.0:4040"},
                                            {"LEASEHOLD_HTTP_ADDRESS", "127.0.0.1:4040"}}),
            "LEASEHOLD_HTTP_ADDRESS \"127.0.0.1:4040\" and LEASEHOLD_HTTP \"0.0.0.0:4040\" "
            "disagree: both set --http-address; give one of them");
  const auto file = dir_.write("c.yaml", "leaseName: a\nleaseDuration: 15s\nttl: 10s\n");
  EXPECT_EQ(failure({"--config", file.string()}),
            "config " + file.string() + ":2: leaseDuration \"15s\" and config " + file.string() +
                ":3: ttl \"10s\" disagree: both set --lease-duration; give one of them");
  // Two other names for the same flag.
  EXPECT_THAT(failure({"--election", "a", "--leader-elect-resource-name", "b"}),
              HasSubstr("--election \"a\" and --leader-elect-resource-name \"b\" disagree"));
  EXPECT_THAT(failure({"--lease-name", "a", "--namespace", "x", "--election-namespace", "y"}),
              HasSubstr("--election-namespace \"y\" and --namespace \"x\" disagree"));
}

TEST_F(CompatibilityFlagsTest, AnAliasAndItsFlagMayAgree) {
  auto config = loaded({"--election", "a", "--lease-name", "a", "--leader-elect-lease-duration",
                        "15000ms", "--lease-duration", "15s"});
  EXPECT_EQ(config.leaseName, "a");
  EXPECT_EQ(config.timings.leaseDuration, 15s);
  // --ttl agrees with the lease duration it rounds to, and still sets R and P.
  config = loaded({"--lease-name", "a", "--ttl", "1500ms", "--lease-duration", "2s"});
  EXPECT_EQ(config.timings.renewDeadline, 1s);
  EXPECT_EQ(loaded({"--lease-name", "a", "--http", ":4040", "--http-address", "0.0.0.0:4040"})
                .httpAddress.port,
            4040);
}

// Flags beat the environment, which beats the file, whatever name each uses.
TEST_F(CompatibilityFlagsTest, PrecedenceAcrossSourcesIsThatOfEveryFlag) {
  const auto file = dir_.write("c.yaml", "leaseName: from-file\nttl: 4s\n");
  auto config = loaded({"--config", file.string(), "--election", "from-flag"},
                       {{"LEASEHOLD_LEASE_NAME", "from-env"}});
  EXPECT_EQ(config.leaseName, "from-flag");
  config = loaded({"--config", file.string()}, {{"LEASEHOLD_ELECTION", "from-env"}});
  EXPECT_EQ(config.leaseName, "from-env");
  EXPECT_EQ(config.timings.leaseDuration, 4s);
  // The file's --ttl lost to a flag: its rule does not apply either.
  config = loaded({"--config", file.string(), "--lease-duration", "20s"});
  EXPECT_EQ(config.timings.leaseDuration, 20s);
  EXPECT_EQ(config.timings.renewDeadline, 10s);
  EXPECT_EQ(config.timings.retryPeriod, 2s);
}

TEST_F(CompatibilityFlagsTest, TtlKeepsRenewDeadlineAndRetryPeriodThatAreGiven) {
  auto config = loaded({"--election", "a", "--ttl", "10s", "--renew-deadline", "8s"});
  EXPECT_EQ(config.timings.renewDeadline, 8s);
  EXPECT_EQ(config.timings.retryPeriod, 2500ms);
  config = loaded({"--election", "a", "--ttl", "10s"}, {{"LEASEHOLD_RETRY_PERIOD", "1s"}});
  EXPECT_EQ(config.timings.renewDeadline, 5s);
  EXPECT_EQ(config.timings.retryPeriod, 1s);
  // What is given is checked like any other timing, naming where it came from.
  EXPECT_THAT(
      failure({"--election", "a", "--ttl", "4s", "--leader-elect-retry-period", "3s"}),
      HasSubstr("--renew-deadline (2s) must be greater than 1.2 x --retry-period (3s), "
                "so the leader gets more than one try before it steps down "
                "(--lease-duration from --ttl; --renew-deadline from --ttl; --retry-period from "
                "--leader-elect-retry-period)"));
}

// The documented rule must give valid timings for every ttl a user can write.
TEST_F(CompatibilityFlagsTest, TtlRuleAlwaysGivesValidTimings) {
  for (const char* ttl : {"1ns", "1ms", "999ms", "1s", "1001ms", "2s", "3s", "7s", "10s", "59s",
                          "1m30s", "1h", "100h"}) {
    SCOPED_TRACE(ttl);
    const auto config = loaded({"--election", "a", "--ttl", ttl});
    const auto& t = config.timings;
    EXPECT_FALSE(t.validate()) << *t.validate();
    EXPECT_EQ(t.leaseDuration % 1s, 0s);
    EXPECT_GE(t.leaseDuration, std::get<time::Duration>(DurationParser::parse(ttl)))
        << "never shorter than asked";
    EXPECT_EQ(t.renewDeadline, ttlTimings(t.leaseDuration).renewDeadline);
    EXPECT_EQ(t.retryPeriod, ttlTimings(t.leaseDuration).retryPeriod);
  }
}

TEST_F(CompatibilityFlagsTest, BadTtlNamesTheFlag) {
  EXPECT_EQ(failure({"--election", "a", "--ttl", "0"}), "--ttl: must be greater than 0");
  EXPECT_THAT(failure({"--election", "a", "--ttl", "soon"}),
              HasSubstr("--ttl: invalid duration \"soon\""));
  EXPECT_THAT(failure({"--election", "a"}, {{"LEASEHOLD_TTL", "10"}}),
              HasSubstr("LEASEHOLD_TTL: invalid duration \"10\": missing unit"));
}

TEST_F(CompatibilityFlagsTest, OnlyLeaseLocksAreAccepted) {
  for (const char* lock : {"endpoints", "configmaps", "endpointsleases", "configmapsleases"}) {
    SCOPED_TRACE(lock);
    EXPECT_EQ(failure({"--election", "a", std::string("--leader-elect-resource-lock=") + lock}),
              std::string("--leader-elect-resource-lock: \"") + lock +
                  "\" is not supported: leasehold locks a coordination.k8s.io/v1 Lease; use "
                  "leases (docs/migration.md: Endpoints and ConfigMap locks)");
  }
  EXPECT_EQ(failure({"--election", "a", "--lock-type", "etcd"}),
            "--lock-type: \"etcd\" is not a lock type (use leases)");
  EXPECT_THAT(failure({"--election", "a"}, {{"LEASEHOLD_LOCK_TYPE", "configmaps"}}),
              HasSubstr("LEASEHOLD_LOCK_TYPE: \"configmaps\" is not supported"));
  const auto file = dir_.write("c.yaml", "election: a\nleaderElectResourceLock: endpoints\n");
  EXPECT_THAT(failure({"--config", file.string()}),
              HasSubstr("config " + file.string() +
                        ":2: leaderElectResourceLock: \"endpoints\" is not supported"));
}

TEST_F(CompatibilityFlagsTest, LeaderElectFalseIsRefusedWhereverItComesFrom) {
  EXPECT_TRUE(std::holds_alternative<Config>(load({"--election", "a", "--leader-elect"})));
  EXPECT_THAT(failure({"--election", "a", "--leader-elect=false"}),
              HasSubstr("--leader-elect: false is not supported: leasehold is the election"));
  EXPECT_THAT(failure({"--election", "a"}, {{"LEASEHOLD_LEADER_ELECT", "0"}}),
              HasSubstr("LEASEHOLD_LEADER_ELECT: false is not supported"));
  EXPECT_THAT(failure({"--election", "a"}, {{"LEASEHOLD_LEADER_ELECT", "maybe"}}),
              HasSubstr("LEASEHOLD_LEADER_ELECT: \"maybe\" is not a boolean"));
  const auto file = dir_.write("c.yaml", "election: a\nleaderElect: false\n");
  EXPECT_THAT(failure({"--config", file.string()}),
              HasSubstr(":2: leaderElect: false is not supported"));
  // The flag wins over the environment here too.
  EXPECT_TRUE(std::holds_alternative<Config>(
      load({"--election", "a", "--leader-elect=true"}, {{"LEASEHOLD_LEADER_ELECT", "false"}})));
}

TEST_F(CompatibilityFlagsTest, ValidationNamesTheAliasAValueCameFrom) {
  EXPECT_THAT(failure({"--election", "My_App"}),
              HasSubstr("--lease-name (from --election): \"My_App\" must consist of lowercase"));
  EXPECT_THAT(failure({"--election", "a", "--http", "4040"}),
              HasSubstr("--http: \"4040\" is not a valid host:port: missing :port"));
}

TEST_F(CompatibilityFlagsTest, FileKeysAreKnownAndSuggested) {
  const auto file = dir_.write("c.yaml", "election: a\nelectionNamespce: b\n");
  EXPECT_THAT(failure({"--config", file.string()}),
              HasSubstr(":2: electionNamespce: unknown key (did you mean electionNamespace?)"));
  const auto wrong = dir_.write("w.yaml", "election: [a]\n");
  EXPECT_THAT(failure({"--config", wrong.string()}),
              HasSubstr(":1: election: expected a string, got a list"));
}

}  // namespace
}  // namespace leasehold::config

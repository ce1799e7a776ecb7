// --fast-failover from flags, environment and file, and what it cannot be combined with, each
// refusal naming the flags (docs/design.md, "Fast failover").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ConfigLoaderFixture.h"
#include "config/ConfigPrinter.h"

namespace leasehold::config::fast_failover_test {

using testing::HasSubstr;

TEST_F(ConfigLoaderTest, FastFailoverIsOffByDefault) {
  const auto config = loaded({"--lease-name", "a"});
  EXPECT_FALSE(config.fastFailover);
  EXPECT_THAT(ConfigPrinter::print(config), testing::Not(HasSubstr("fastFailover")));
}

TEST_F(ConfigLoaderTest, FastFailoverFromFlagEnvironmentAndFile) {
  EXPECT_TRUE(loaded({"--lease-name", "a", "--fast-failover"}).fastFailover);
  EXPECT_TRUE(loaded({"--lease-name", "a"}, {{"LEASEHOLD_FAST_FAILOVER", "true"}}).fastFailover);
  const auto file = dir_.write("c.yaml", "fastFailover: true\n").string();
  const auto config = loaded({"--lease-name", "a", "--config", file});
  EXPECT_TRUE(config.fastFailover);
  EXPECT_THAT(ConfigPrinter::print(config), HasSubstr("fastFailover: true"));
}

const RefusedConfig kRejected[] = {
    {"StatusFile",
     {"--lease-name", "a", "--fast-failover", "--status-file", "/tmp/s.json"},
     {},
     {"--fast-failover cannot be used with --status-file", "a file outlives the process",
      "/leader/watch"}},
    {"StatusFileFromEnvironment",
     {"--lease-name", "a"},
     {{"LEASEHOLD_FAST_FAILOVER", "true"}, {"LEASEHOLD_STATUS_FILE", "/tmp/s.json"}},
     {"--fast-failover (from LEASEHOLD_FAST_FAILOVER) cannot be used with --status-file (from "
      "LEASEHOLD_STATUS_FILE)"}},
    {"Coordinated",
     {"--lease-name", "a", "--fast-failover", "--coordinated"},
     {},
     {"--fast-failover cannot be used with --coordinated"}},
    {"Shards",
     {"--lease-name", "a", "--fast-failover", "--shards", "4"},
     {},
     {"--shards cannot be used with --fast-failover"}},
    {"Etcd",
     {"--lease-name", "a", "--fast-failover", "--store", "etcd", "--etcd-endpoints",
      "http://127.0.0.1:2379"},
     {},
     {"--store etcd cannot be used with --fast-failover (Kubernetes only)"}},
    {"NotABoolean",
     {"--lease-name", "a"},
     {{"LEASEHOLD_FAST_FAILOVER", "soon"}},
     {"LEASEHOLD_FAST_FAILOVER"}},
};

class FastFailoverRejected : public RefusedConfigTest {};

TEST_P(FastFailoverRejected, Case) {
  expectRefused();
}

INSTANTIATE_TEST_SUITE_P(FastFailover, FastFailoverRejected, testing::ValuesIn(kRejected),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(ConfigLoaderTest, HelpDescribesFastFailover) {
  const auto help = load({"--help"});
  ASSERT_TRUE(std::holds_alternative<HelpRequested>(help));
  const auto& text = std::get<HelpRequested>(help).text;
  EXPECT_THAT(text, HasSubstr("--fast-failover"));
  EXPECT_THAT(text, HasSubstr("POD_UID"));
  EXPECT_THAT(text, HasSubstr("LEASEHOLD_CONTAINER"));
}

}  // namespace leasehold::config::fast_failover_test

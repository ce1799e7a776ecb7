// --shards and --shard-drain: accepted values, and each rejection names the flag.
#include "ConfigLoaderFixture.h"

namespace leasehold::config {
namespace {

using namespace std::chrono_literals;

TEST_F(ConfigLoaderTest, ShardsAndDrain) {
  const auto c = loaded({"--lease-name", "work", "--shards", "16", "--shard-drain", "2s"});
  EXPECT_EQ(c.shards, 16u);
  EXPECT_EQ(c.shardDrain, 2s);
  EXPECT_EQ(loaded({"--lease-name", "work"}).shards, 0u);
  EXPECT_EQ(loaded({"--lease-name", "work", "--shards", "1024"}).shards, 1024u);
  EXPECT_EQ(loaded({"--lease-name", "work"}, {{"LEASEHOLD_SHARDS", "3"}}).shards, 3u);
}

// leasehold run --shards N -- CMD: one command per owned shard (lock::RunMode,
// shard::shardCommands).
TEST_F(ConfigLoaderTest, RunModeWithShards) {
  const auto c = loaded({"run", "--lease-name", "work", "--shards", "8", "--restart", "on-failure",
                         "--exit-on-loss", "--", "my-job", "--flag"});
  EXPECT_TRUE(c.runMode);
  EXPECT_EQ(c.shards, 8u);
  EXPECT_EQ(c.command, (std::vector<std::string>{"my-job", "--flag"}));
  EXPECT_TRUE(c.exitOnLoss);
}

TEST_F(ConfigLoaderTest, ShardRejections) {
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"--lease-name", "work", "--shards", "0"}, "--shards: \"0\" is not a whole number"},
      {{"--lease-name", "work", "--shards", "1025"}, "from 1 to 1024"},
      {{"--lease-name", "work", "--shards", "4x"}, "--shards"},
      {{"--lease-name", "work", "--shards", "-1"}, "--shards"},
      {{"--shards", "4"}, "--lease-name is required"},
      {{"--lease-name", "work.example", "--shards", "4"}, "--lease-name with --shards"},
      {{"--lease-name", "work", "--shard-drain", "1s"}, "--shard-drain: only with --shards"},
      {{"--lease-name", "work", "--shards", "4", "--pod-label", "leader"},
       "--shards cannot be used with --pod-label"},
      {{"--lease-name", "work", "--shards", "4", "--follower-mode", "poll"}, "--follower-mode"},
      {{"--lease-name", "work", "--shards", "4", "--release-cooldown", "1s"}, "--release-cooldown"},
      {{"run", "--lease-name", "work", "--shards", "4", "--kill-grace", "20s", "--", "true"},
       "--kill-grace"},
      {{"--lease-name", "work", "--shards", "4", "--coordinated"}, "--coordinated"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args.back());
    EXPECT_THAT(failure(c.args), testing::HasSubstr(c.needle));
  }
}

}  // namespace
}  // namespace leasehold::config

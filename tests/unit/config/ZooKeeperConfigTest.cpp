// --store zookeeper and its settings: what is accepted (and printed back, the password file's
// path but never a password, the effective session timeout), and what is refused, naming the
// flag: no servers, a session timeout shorter than R + --zk-server-lag, a path ZooKeeper would
// refuse or keeps for itself, a certificate without its key, a user without a password file,
// Kubernetes-only settings, ZooKeeper settings without it. --shards on ZooKeeper (the group /NAME).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ConfigLoaderFixture.h"
#include "config/ConfigPrinter.h"

namespace leasehold::config {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;

std::vector<std::string> zkWith(std::vector<std::string> more = {},
                                std::string name = "services/scheduler") {
  std::vector<std::string> args = {"--lease-name", std::move(name), "--store",
                                   "zookeeper",    "--zk-servers",  "zk-0:2181,zk-1:2181/apps"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST_F(ConfigLoaderTest, ZooKeeperFromFlagsIsTheStoreWithItsSettings) {
  const auto c =
      loaded(zkWith({"--zk-cacert", "/ca.pem", "--zk-cert", "/c.pem", "--zk-key", "/k.pem",
                     "--zk-user", "lh", "--zk-password-file", "/run/pw", "--zk-server-lag", "3s"}));
  EXPECT_EQ(c.store, Store::ZooKeeper);
  EXPECT_EQ(c.leaseName, "services/scheduler");  // the path /services/scheduler
  EXPECT_EQ(c.zkServers, "zk-0:2181,zk-1:2181/apps");
  EXPECT_EQ(c.zkServerLag, 3s);
  EXPECT_EQ(zkSessionTimeoutOf(c), 15s);  // D, which is more than R + L + P = 15s
  const auto printed = ConfigPrinter::print(c);
  EXPECT_THAT(printed, HasSubstr("store: zookeeper"));
  EXPECT_THAT(printed, HasSubstr("zkServers: \"zk-0:2181,zk-1:2181/apps\""));
  EXPECT_THAT(printed, HasSubstr("zkSessionTimeout: 15s"));
  EXPECT_THAT(printed, HasSubstr("zkTls: true"));  // implied by the CA
  EXPECT_THAT(printed, HasSubstr("zkPasswordFile: \"/run/pw\""));
  // What it prints loads back as the same settings.
  const auto again = loaded({"--config", dir_.write("printed.yaml", printed).string()});
  EXPECT_EQ(again.store, Store::ZooKeeper);
  EXPECT_EQ(again.zkServers, c.zkServers);
  EXPECT_EQ(again.zkSessionTimeout, 15s);
  EXPECT_EQ(again.zkKey, "/k.pem");
}

TEST_F(ConfigLoaderTest, ZooKeeperFromEnvironment) {
  const auto c = loaded({"--lease-name", "a"}, {{"LEASEHOLD_STORE", "zookeeper"},
                                                {"LEASEHOLD_ZK_SERVERS", "127.0.0.1:2181"},
                                                {"LEASEHOLD_ZK_SESSION_TIMEOUT", "30s"}});
  EXPECT_EQ(c.store, Store::ZooKeeper);
  EXPECT_EQ(zkSessionTimeoutOf(c), 30s);
}

TEST_F(ConfigLoaderTest, ZooKeeperShardsAreAccepted) {
  const auto c = loaded(zkWith({"--shards", "8", "--shard-drain", "1s"}));
  EXPECT_EQ(c.store, Store::ZooKeeper);
  EXPECT_EQ(c.shards, 8u);
  EXPECT_EQ(c.shardDrain, 1s);
  EXPECT_THAT(ConfigPrinter::print(c), HasSubstr("shards: 8"));
}

struct Refused {
  const char* name;
  std::vector<std::string> args;
  std::vector<std::string> mentions;
};

void PrintTo(const Refused& c, std::ostream* os) {
  *os << c.name;
}

const Refused kRefused[] = {
    {"NoServers",
     {"--lease-name", "a", "--store", "zookeeper"},
     {"--store zookeeper needs --zk-servers"}},
    {"SessionTimeoutShorterThanClaimPlusLag",
     zkWith({"--zk-session-timeout", "15s"}),
     {"--zk-session-timeout (15s) must be at least --renew-deadline + --zk-server-lag + the "
      "longest time between two requests, --renew-interval or --retry-period (24s)"}},
    {"LagNegative", zkWith({"--zk-server-lag", "-1s"}), {"--zk-server-lag"}},
    {"PathWithEmptyComponent", zkWith({}, "a//b"), {"--lease-name", "\"a//b\"", "'//'"}},
    {"PathWithDots", zkWith({}, "a/../b"), {"--lease-name", "'..'"}},
    {"PathEndsWithSlash", zkWith({}, "a/"), {"--lease-name", "end with '/'"}},
    {"PathUnderZookeeper", zkWith({}, "zookeeper/quota"), {"/zookeeper", "servers keep"}},
    {"CertWithoutKey", zkWith({"--zk-cert", "/c.pem"}), {"--zk-cert: only together with --zk-key"}},
    {"UserWithoutPassword",
     zkWith({"--zk-user", "lh"}),
     {"--zk-user: only together with --zk-password-file"}},
    {"KubernetesOnly",
     zkWith({"--kubeconfig", "/k", "--fast-failover"}),
     {"--store zookeeper cannot be used with --kubeconfig, --fast-failover (Kubernetes only)"}},
    {"ShardsWithPodLabel", zkWith({"--shards", "4", "--pod-label", "leader"}), {"--pod-label"}},
    {"ZooKeeperSettingWithoutZooKeeper",
     {"--lease-name", "a", "--zk-servers", "z:2181"},
     {"--zk-servers: only with --store zookeeper"}},
};

class ZooKeeperRefused : public ConfigLoaderTest, public testing::WithParamInterface<Refused> {};

TEST_P(ZooKeeperRefused, Case) {
  const auto message = failure(GetParam().args);
  for (const auto& m : GetParam().mentions)
    EXPECT_THAT(message, HasSubstr(m));
}

INSTANTIATE_TEST_SUITE_P(ZooKeeper, ZooKeeperRefused, testing::ValuesIn(kRefused),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace leasehold::config

// --store etcd and its settings from flags, environment and file: what is accepted (and printed
// back, the password file's path but never a password), and what is refused, naming the flag:
// no endpoints, a URL that is not http(s), a certificate without its key, a user without a
// password file, Kubernetes-only settings, etcd settings without --store etcd. --shards on etcd.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ConfigLoaderFixture.h"
#include "config/ConfigPrinter.h"

namespace leasehold::config {
namespace {

using testing::HasSubstr;

const std::vector<std::string> kEtcd = {"--lease-name", "jobs/scheduler", "--store", "etcd",
                                        "--etcd-endpoints"};

std::vector<std::string> etcdWith(std::string endpoints, std::vector<std::string> more = {}) {
  auto args = kEtcd;
  args.push_back(std::move(endpoints));
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST_F(ConfigLoaderTest, EtcdFromFlagsIsTheStoreWithItsSettings) {
  const auto c =
      loaded(etcdWith(" https://10.0.0.1:2379, https://10.0.0.2:2379",
                      {"--etcd-cacert", "/etc/etcd/ca.pem", "--etcd-cert", "/c.pem", "--etcd-key",
                       "/k.pem", "--etcd-user", "lh", "--etcd-password-file", "/run/secrets/pw"}));
  EXPECT_EQ(c.store, Store::Etcd);
  EXPECT_EQ(c.leaseName, "jobs/scheduler");  // not a Kubernetes name: an etcd election's
  EXPECT_THAT(c.etcdEndpoints,
              testing::ElementsAre("https://10.0.0.1:2379", "https://10.0.0.2:2379"));
  EXPECT_EQ(c.etcdUser, "lh");
  EXPECT_EQ(c.etcdPasswordFile, "/run/secrets/pw");
  const auto printed = ConfigPrinter::print(c);
  EXPECT_THAT(printed, HasSubstr("store: etcd"));
  EXPECT_THAT(printed, HasSubstr("etcdEndpoints: https://10.0.0.1:2379,https://10.0.0.2:2379"));
  EXPECT_THAT(printed, HasSubstr("etcdPasswordFile: \"/run/secrets/pw\""));
  // What it prints loads back as the same settings.
  const auto again = loaded({"--config", dir_.write("printed.yaml", printed).string()});
  EXPECT_EQ(again.store, Store::Etcd);
  EXPECT_EQ(again.etcdEndpoints, c.etcdEndpoints);
  EXPECT_EQ(again.etcdKey, "/k.pem");
}

TEST_F(ConfigLoaderTest, EtcdFromEnvironmentAndFile) {
  const auto fromEnv =
      loaded({"--lease-name", "a"},
             {{"LEASEHOLD_STORE", "etcd"}, {"LEASEHOLD_ETCD_ENDPOINTS", "http://e:2379"}});
  EXPECT_EQ(fromEnv.store, Store::Etcd);
  EXPECT_THAT(fromEnv.etcdEndpoints, testing::ElementsAre("http://e:2379"));
  const auto fromFile = loaded(
      {"--config",
       dir_.write("c.yaml", "leaseName: a\nstore: etcd\netcdEndpoints: http://e:2379\n").string()});
  EXPECT_EQ(fromFile.store, Store::Etcd);
}

TEST_F(ConfigLoaderTest, EtcdWithShards) {
  // The group's name is an etcd prefix, not a Kubernetes label value: "/" is fine.
  const auto c = loaded(etcdWith("http://a:2379", {"--shards", "4", "--shard-drain", "1s"}));
  EXPECT_EQ(c.store, Store::Etcd);
  EXPECT_EQ(c.shards, 4u);
  EXPECT_EQ(c.leaseName, "jobs/scheduler");
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
    {"NoEndpoints",
     {"--lease-name", "a", "--store", "etcd"},
     {"--store etcd needs --etcd-endpoints"}},
    {"NotAUrl",
     etcdWith("127.0.0.1:2379"),
     {"--etcd-endpoints", "\"127.0.0.1:2379\" is not an http"}},
    {"EmptyInList", etcdWith("http://a:2379,,http://b:2379"), {"--etcd-endpoints", "\"\""}},
    {"UnknownStore", {"--lease-name", "a", "--store", "consul"}, {"--store", "\"consul\""}},
    {"CertWithoutKey",
     etcdWith("http://a:2379", {"--etcd-cert", "/c.pem"}),
     {"--etcd-cert: only together with --etcd-key"}},
    {"UserWithoutPassword",
     etcdWith("http://a:2379", {"--etcd-user", "lh"}),
     {"--etcd-user: only together with --etcd-password-file"}},
    {"KubernetesOnly",
     etcdWith("http://a:2379", {"--kubeconfig", "/k", "--pod-label", "leader", "--coordinated",
                                "--lease-namespace", "x"}),
     {"--store etcd cannot be used with --lease-namespace, --kubeconfig, --pod-label, "
      "--coordinated"}},
    {"ShardsWithPodLabel",
     etcdWith("http://a:2379", {"--shards", "4", "--pod-label", "leader"}),
     {"--store etcd cannot be used with --pod-label"}},
    {"NameEndsWithSlash",
     {"--lease-name", "a/", "--store", "etcd", "--etcd-endpoints", "http://a:2379"},
     {"--lease-name with --store etcd: \"a/\""}},
    {"EtcdSettingWithoutEtcd",
     {"--lease-name", "a", "--etcd-endpoints", "http://a:2379"},
     {"--etcd-endpoints: only with --store etcd"}},
};

class EtcdRefused : public ConfigLoaderTest, public testing::WithParamInterface<Refused> {};

TEST_P(EtcdRefused, Case) {
  const auto message = failure(GetParam().args);
  for (const auto& m : GetParam().mentions)
    EXPECT_THAT(message, HasSubstr(m));
}

INSTANTIATE_TEST_SUITE_P(Etcd, EtcdRefused, testing::ValuesIn(kRefused),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace leasehold::config

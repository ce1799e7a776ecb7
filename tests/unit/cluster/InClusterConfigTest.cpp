#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <regex>

#include "MinimalKubeconfig.h"
#include "TemporaryDirectory.h"
#include "TestPem.h"
#include "cluster/RestConfigLoader.h"
#include "config/ConfigLoader.h"

namespace leasehold::cluster {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;
using testing_support::kCaPem;
using testing_support::minimalKubeconfig;

class InClusterConfigTest : public testing::Test {
 protected:
  InClusterConfigTest() {
    dir_.write("serviceaccount/token", "sa-token");
    dir_.write("serviceaccount/ca.crt", kCaPem);
    dir_.write("serviceaccount/namespace", "team-a\n");
  }

  LoadResult<RestConfig> load(const RestConfigLoader::Environment& env) {
    return RestConfigLoader::loadInCluster(env, saDir(), {[this] { return now_; }, {}});
  }

  std::filesystem::path saDir() const { return dir_.path() / "serviceaccount"; }

  testing_support::TemporaryDirectory dir_;
  time::MonoTime now_{0s};
  RestConfigLoader::Environment env_{{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                     {"KUBERNETES_SERVICE_PORT", "443"}};
};

TEST_F(InClusterConfigTest, ReadsServiceAccount) {
  const auto config = load(env_);
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->caPem, kCaPem);
  EXPECT_EQ(config->defaultNamespace, "team-a");
  EXPECT_FALSE(config->insecureSkipTlsVerify);
  EXPECT_TRUE(config->clientCertificatePem.empty());
  ASSERT_TRUE(config->tokenSource);
  EXPECT_EQ(config->tokenSource->token().token, "sa-token");
  EXPECT_THAT(config->source, HasSubstr("in-cluster"));
}

TEST_F(InClusterConfigTest, TokenIsRereadWhileRunning) {
  const auto config = load(env_);
  ASSERT_TRUE(config) << config.message();
  dir_.write("serviceaccount/token", "rotated");
  now_ += 50s;
  EXPECT_EQ(config->tokenSource->token().token, "rotated");
}

TEST_F(InClusterConfigTest, Ipv6HostInBrackets) {
  env_["KUBERNETES_SERVICE_HOST"] = "fd00:10:96::1";
  const auto config = load(env_);
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->server, "https://[fd00:10:96::1]:443");
}

TEST_F(InClusterConfigTest, NeedsBothVariables) {
  for (const char* missing : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
    auto env = env_;
    env.erase(missing);
    const auto config = load(env);
    ASSERT_FALSE(config);
    EXPECT_THAT(config.message(), HasSubstr(std::string(missing) + " is not set"));
  }
  EXPECT_FALSE(load({}));
  EXPECT_FALSE(RestConfigLoader::inClusterEnvironment({}));
  EXPECT_TRUE(RestConfigLoader::inClusterEnvironment(env_));
}

TEST_F(InClusterConfigTest, RejectsBadPort) {
  env_["KUBERNETES_SERVICE_PORT"] = "https";
  EXPECT_THAT(load(env_).message(), HasSubstr("is not a port number"));
}

TEST_F(InClusterConfigTest, MissingTokenFile) {
  std::filesystem::remove(saDir() / "token");
  const auto config = load(env_);
  ASSERT_FALSE(config);
  EXPECT_THAT(config.message(), HasSubstr((saDir() / "token").string()));
  EXPECT_THAT(config.message(), HasSubstr("No such file"));
}

TEST_F(InClusterConfigTest, EmptyTokenFileAtStart) {
  dir_.write("serviceaccount/token", "");
  EXPECT_THAT(load(env_).message(), HasSubstr("token file is empty"));
}

TEST_F(InClusterConfigTest, EmptyTokenFileLaterKeepsOldToken) {
  const auto config = load(env_);
  ASSERT_TRUE(config) << config.message();
  dir_.write("serviceaccount/token", "");
  now_ += 60s;
  const auto result = config->tokenSource->token();
  EXPECT_EQ(result.token, "sa-token");
  EXPECT_TRUE(result.warning);
}

TEST_F(InClusterConfigTest, MissingOrBadCa) {
  std::filesystem::remove(saDir() / "ca.crt");
  EXPECT_THAT(load(env_).message(), HasSubstr("ca.crt: cannot read"));
  dir_.write("serviceaccount/ca.crt", "garbage");
  EXPECT_THAT(load(env_).message(), HasSubstr("ca.crt: does not contain a PEM certificate"));
}

TEST_F(InClusterConfigTest, NamespaceFileIsOptional) {
  std::filesystem::remove(saDir() / "namespace");
  const auto config = load(env_);
  ASSERT_TRUE(config) << config.message();
  EXPECT_FALSE(config->defaultNamespace);
}

TEST_F(InClusterConfigTest, LoadPrefersExplicitKubeconfigThenInCluster) {
  const auto kubeconfig = dir_.write("kubeconfig", minimalKubeconfig("https://kc:6443"));
  // In-cluster variables alone: in-cluster.
  auto config = RestConfigLoader::load({}, env_, saDir());
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  // KUBECONFIG set: the kubeconfig wins, as with client-go.
  auto env = env_;
  env["KUBECONFIG"] = kubeconfig.string();
  config = RestConfigLoader::load({}, env, saDir());
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->server, "https://kc:6443");
  // --kubeconfig given: the kubeconfig.
  config = RestConfigLoader::load({kubeconfig, std::nullopt}, env_, saDir());
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->server, "https://kc:6443");
  // Neither: $HOME/.kube/config.
  dir_.write("home/.kube/config", minimalKubeconfig("https://home:6443"));
  config = RestConfigLoader::load({}, {{"HOME", (dir_.path() / "home").string()}}, saDir());
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->server, "https://home:6443");
}

// --kubeconfig's help says where the cluster access comes from without it, "(default: A, else B,
// else C)". Read as an order and held to load(): with every source at hand A is used, without A
// then B, and so on. (config_test's DocumentedDefaults leaves this default to this test.)
TEST_F(InClusterConfigTest, LoadOrderIsTheOneKubeconfigHelpStates) {
  std::string help;
  for (const auto& setting : config::ConfigLoader::settingHelp()) {
    if (setting.flag == "kubeconfig") help = setting.help;
  }
  std::smatch match;
  ASSERT_TRUE(std::regex_search(help, match, std::regex(R"(\(default: ([^()]*)\)$)"))) << help;
  const std::string documented = match[1].str();

  struct Source {
    std::string documentedAs;  // how the help text starts naming it
    std::function<void(RestConfigLoader::Environment&)> offer;
    std::string server;  // what load() answers when it picks this source
  };
  const auto kubeconfig = dir_.write("kubeconfig", minimalKubeconfig("https://kc:6443"));
  dir_.write("home/.kube/config", minimalKubeconfig("https://home:6443"));
  const std::vector<Source> sources = {
      {"$KUBECONFIG", [&](auto& env) { env["KUBECONFIG"] = kubeconfig.string(); },
       "https://kc:6443"},
      {"in-cluster", [&](auto& env) { env.insert(env_.begin(), env_.end()); },
       "https://10.96.0.1:443"},
      {"~/.kube/config", [&](auto& env) { env["HOME"] = (dir_.path() / "home").string(); },
       "https://home:6443"},
  };

  std::vector<const Source*> order;
  const std::string separator = ", else ";
  for (std::size_t start = 0;;) {
    const auto end = documented.find(separator, start);
    const std::string item = documented.substr(start, end == std::string::npos ? end : end - start);
    const Source* named = nullptr;
    for (const auto& source : sources) {
      if (item.starts_with(source.documentedAs)) named = &source;
    }
    ASSERT_NE(named, nullptr) << "\"" << item << "\" names no source this test knows";
    order.push_back(named);
    if (end == std::string::npos) break;
    start = end + separator.size();
  }
  ASSERT_EQ(order.size(), sources.size()) << documented;

  for (std::size_t first = 0; first < order.size(); ++first) {
    RestConfigLoader::Environment env;
    for (std::size_t i = first; i < order.size(); ++i)
      order[i]->offer(env);
    SCOPED_TRACE("offered from " + order[first]->documentedAs + " on");
    const auto config = RestConfigLoader::load({}, env, saDir());
    ASSERT_TRUE(config) << config.message();
    EXPECT_EQ(config->server, order[first]->server) << "help: " << documented;
  }
}

}  // namespace
}  // namespace leasehold::cluster

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "MinimalKubeconfig.h"
#include "TemporaryDirectory.h"
#include "TestPem.h"
#include "cluster/RestConfigLoader.h"

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

}  // namespace
}  // namespace leasehold::cluster

// A known secret is fed through every path that can fail; no message may contain it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "LoopRunner.h"
#include "TemporaryDirectory.h"
#include "TestPem.h"
#include "cluster/ExecTokenSource.h"
#include "cluster/FileTokenSource.h"
#include "cluster/RestConfigLoader.h"
#include "net/Base64.h"

namespace leasehold::cluster {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;
using testing::Not;

const std::string kSecret = "s3cr3t-T0KEN-do-not-print";

class SecretRedactionTest : public testing::Test {
 protected:
  std::string failure(const std::string& kubeconfigYaml) {
    const auto path = dir_.write("config", kubeconfigYaml);
    const auto config = RestConfigLoader::loadKubeconfig({path, std::nullopt}, {});
    EXPECT_FALSE(config) << kubeconfigYaml;
    return config ? "" : config.message();
  }

  testing_support::TemporaryDirectory dir_;
};

TEST_F(SecretRedactionTest, KubeconfigErrors) {
  const std::string cluster = R"(
clusters: [{name: c, cluster: {server: "https://c:1"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)";
  std::vector<std::string> messages = {
      // Token of the wrong type, next to a broken key.
      failure(cluster + "users: [{name: u, user: {token: [" + kSecret + "]}}]\n"),
      // Secret as client-key-data that is not base64.
      failure(cluster + "users: [{name: u, user: {client-certificate-data: " +
              net::Base64::encode(testing_support::kClientCertPem) + ", client-key-data: '" +
              kSecret + "!'}}]\n"),
      // Base64 of a secret that is not PEM.
      failure(cluster + "users: [{name: u, user: {client-certificate-data: " +
              net::Base64::encode(testing_support::kClientCertPem) +
              ", client-key-data: " + net::Base64::encode(kSecret) + "}}]\n"),
      // Token together with exec.
      failure(cluster + "users: [{name: u, user: {token: " + kSecret +
              ", exec: {command: x, apiVersion: client.authentication.k8s.io/v1}}}]\n"),
      // Token next to an unsupported auth-provider.
      failure(cluster + "users: [{name: u, user: {token: " + kSecret +
              ", auth-provider: {name: oidc, config: {id-token: " + kSecret + "}}}}]\n"),
      // Exec env value of the wrong type.
      failure(cluster + "users: [{name: u, user: {exec: {command: x, env: [{name: T, value: [" +
              kSecret + "]}]}}}]\n"),
      // Secret inside a YAML syntax error.
      failure(cluster + "users: [{name: u, user: {token: \"" + kSecret + "}}]\n"),
  };
  for (const auto& message : messages) {
    EXPECT_FALSE(message.empty());
    EXPECT_THAT(message, Not(HasSubstr(kSecret)));
    EXPECT_THAT(message, Not(HasSubstr("s3cr3t")));
  }
}

TEST_F(SecretRedactionTest, TokenFileWarnings) {
  const auto path = dir_.write("token", kSecret);
  time::MonoTime now{0s};
  auto source = FileTokenSource::open(path, [&] { return now; });
  ASSERT_TRUE(source);
  EXPECT_THAT((*source)->describe(), Not(HasSubstr(kSecret)));
  std::filesystem::remove(path);
  (*source)->invalidate();
  const auto result = (*source)->token();
  EXPECT_EQ(result.token, kSecret);
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, Not(HasSubstr(kSecret)));
}

TEST_F(SecretRedactionTest, ExecPluginErrors) {
  const ExecCredentialPlugin::Environment env{{"PATH", "/usr/bin:/bin"}};
  for (const std::string& body : {
           "echo '{\"status\":{\"token\":\"" + kSecret + "\"'\n",
           "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":\"x\",\"status\":{\"token\":\"" +
               kSecret + "\"}}'\n",
           "echo '" + kSecret + "'; exit 1\n",
           "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\","
           "\"status\":{\"token\":\"" +
               kSecret + "\",\"expirationTimestamp\":\"soon\"}}'\n",
       }) {
    ExecPluginConfig config;
    config.command = dir_.script("plugin.sh", body).string();
    config.env = {{"SECRET_ENV", kSecret}};
    ExecTokenSource source(ExecCredentialPlugin(config, env));
    LoopRunner loop;
    const auto attachment = source.attach(loop.io);
    const auto result = loop.usableToken(source);
    ASSERT_TRUE(result.warning) << body;
    EXPECT_THAT(*result.warning, Not(HasSubstr(kSecret))) << body;
    EXPECT_THAT(source.describe(), Not(HasSubstr(kSecret)));
  }
}

}  // namespace
}  // namespace leasehold::cluster

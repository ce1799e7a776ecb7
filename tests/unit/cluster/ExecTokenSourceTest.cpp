#include "cluster/ExecTokenSource.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "TemporaryDirectory.h"
#include "cluster/Kubeconfig.h"
#include "cluster/RestConfigLoader.h"

namespace leasehold::cluster {
namespace {

using namespace std::chrono;
using testing::HasSubstr;
using testing::Not;

// Prints a token that says how many times the plugin ran and what PLUGIN_VAR was, and records
// its arguments and KUBERNETES_EXEC_INFO in $STATE_DIR.
constexpr const char* kCountingPlugin = R"(
n=$(cat "$STATE_DIR/count" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$STATE_DIR/count"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$STATE_DIR/info"
printf '%s' "$*" > "$STATE_DIR/args"
printf '%s' "$BASE_VAR" > "$STATE_DIR/base"
cat <<JSON
{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
 "status":{"token":"tok-$n-$PLUGIN_VAR","expirationTimestamp":"2026-11-30T12:00:00Z"}}
JSON
)";

class ExecTokenSourceTest : public testing::Test {
 protected:
  ExecPluginConfig plugin(const std::string& scriptBody) {
    ExecPluginConfig config;
    config.command = dir_.script("plugin.sh", scriptBody).string();
    config.args = {"--cluster", "dev"};
    config.env = {
        {"PLUGIN_VAR", "hello"}, {"STATE_DIR", dir_.path().string()}, {"BASE_VAR", "overridden"}};
    config.origin = "kubeconfig /k:9: users[0].user.exec";
    return config;
  }

  ExecTokenSource source(ExecPluginConfig config) {
    return ExecTokenSource(ExecCredentialPlugin(std::move(config), env_), [this] { return now_; });
  }

  std::string state(const std::string& name) const {
    std::ifstream in(dir_.path() / name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  int runs() const { return std::atoi(state("count").c_str()); }

  testing_support::TemporaryDirectory dir_;
  ExecCredentialPlugin::Environment env_{
      {"PATH", "/usr/bin:/bin"}, {"BASE_VAR", "base"}, {"OTHER_VAR", "kept"}};
  time::WallTime now_ = sys_days(2026y / November / 30) + 11h;
};

TEST_F(ExecTokenSourceTest, CachesUntilExpiry) {
  auto tokens = source(plugin(kCountingPlugin));
  auto result = tokens.token();
  EXPECT_EQ(result.token, "tok-1-hello");
  EXPECT_FALSE(result.warning);
  now_ += 59min;
  EXPECT_EQ(tokens.token().token, "tok-1-hello");
  EXPECT_EQ(runs(), 1);
  now_ += 1min;  // 12:00, the expirationTimestamp
  EXPECT_EQ(tokens.token().token, "tok-2-hello");
  EXPECT_EQ(runs(), 2);
}

TEST_F(ExecTokenSourceTest, InvalidateRunsThePluginAgain) {
  auto tokens = source(plugin(kCountingPlugin));
  EXPECT_EQ(tokens.token().token, "tok-1-hello");
  tokens.invalidate();
  EXPECT_EQ(tokens.token().token, "tok-2-hello");
  EXPECT_EQ(tokens.token().token, "tok-2-hello");
}

TEST_F(ExecTokenSourceTest, PassesArgsEnvAndExecInfo) {
  auto tokens = source(plugin(kCountingPlugin));
  ASSERT_TRUE(tokens.token().token);
  EXPECT_EQ(state("args"), "--cluster dev");
  EXPECT_EQ(state("base"), "overridden");  // the kubeconfig's env wins over ours
  const auto info = nlohmann::json::parse(state("info"));
  EXPECT_EQ(info.at("kind"), "ExecCredential");
  EXPECT_EQ(info.at("apiVersion"), "client.authentication.k8s.io/v1");
  EXPECT_EQ(info.at("spec").at("interactive"), false);
  EXPECT_FALSE(info.at("spec").contains("cluster"));
}

TEST_F(ExecTokenSourceTest, BadJsonIsAWarningNamingTheCommand) {
  auto config = plugin("echo '{\"kind\": \"ExecCredential\", \"status\": {\"token\": \"SECRET'\n");
  const auto command = config.command;
  auto tokens = source(std::move(config));
  const auto result = tokens.token();
  EXPECT_FALSE(result.token);
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, HasSubstr("exec plugin \"" + command + "\""));
  EXPECT_THAT(*result.warning, HasSubstr("users[0].user.exec"));
  EXPECT_THAT(*result.warning, HasSubstr("not valid JSON"));
  EXPECT_THAT(*result.warning, Not(HasSubstr("SECRET")));
}

TEST_F(ExecTokenSourceTest, NonZeroExitIsAnErrorAndIsNotRetriedAtOnce) {
  auto tokens = source(plugin(R"(
n=$(cat "$STATE_DIR/count" 2>/dev/null || echo 0)
echo $((n + 1)) > "$STATE_DIR/count"
echo "plugin: please log in" >&2
exit 3
)"));
  auto result = tokens.token();
  EXPECT_FALSE(result.token);
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, HasSubstr("exited with status 3"));
  EXPECT_THAT(*result.warning, Not(HasSubstr("hello")));  // env values stay out of messages
  EXPECT_EQ(runs(), 1);

  now_ += 4s;
  result = tokens.token();
  EXPECT_FALSE(result.token);
  EXPECT_FALSE(result.warning);
  EXPECT_EQ(runs(), 1);

  now_ += 1s;
  EXPECT_TRUE(tokens.token().warning);
  EXPECT_EQ(runs(), 2);
}

TEST_F(ExecTokenSourceTest, KilledBySignal) {
  const auto result = source(plugin("kill -9 $$\n")).token();
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, HasSubstr("killed by signal 9"));
}

TEST_F(ExecTokenSourceTest, ClientCertificate) {
  auto tokens = source(plugin(R"(cat <<'JSON'
{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
 "status":{"clientCertificateData":"CERT PEM","clientKeyData":"KEY PEM"}}
JSON
)"));
  const auto first = tokens.token();
  EXPECT_FALSE(first.token);
  ASSERT_TRUE(first.clientCertificate);
  EXPECT_EQ(first.clientCertificate->certificatePem, "CERT PEM");
  EXPECT_EQ(first.clientCertificate->keyPem, "KEY PEM");
  tokens.invalidate();
  // Same certificate again: the same object, so the client need not rebuild its TLS context.
  EXPECT_EQ(tokens.token().clientCertificate, first.clientCertificate);
}

TEST_F(ExecTokenSourceTest, TimeoutKillsThePlugin) {
  auto config = plugin("exec sleep 10\n");
  ExecCredentialPlugin slow(std::move(config), env_, milliseconds(300));
  const auto start = steady_clock::now();
  const auto result = slow.run();
  ASSERT_FALSE(result);
  EXPECT_THAT(result.message(), HasSubstr("did not finish within 300 ms"));
  EXPECT_LT(steady_clock::now() - start, seconds(5));
}

TEST_F(ExecTokenSourceTest, OutputIsLimited) {
  const auto result = ExecCredentialPlugin(plugin("head -c 2000000 /dev/zero\n"), env_).run();
  ASSERT_FALSE(result);
  EXPECT_THAT(result.message(), HasSubstr("printed more than 1048576 bytes"));
}

TEST_F(ExecTokenSourceTest, FindsBareCommandsInPath) {
  dir_.script("bin/my-plugin", kCountingPlugin);
  auto config = plugin("");
  config.command = "my-plugin";
  config.installHint = "Install my-plugin from example.com";
  env_["PATH"] = "/usr/bin:/bin:" + (dir_.path() / "bin").string();
  EXPECT_EQ(source(config).token().token, "tok-1-hello");

  env_["PATH"] = "/usr/bin:/bin";
  const auto result = ExecCredentialPlugin(config, env_).run();
  ASSERT_FALSE(result);
  EXPECT_THAT(result.message(), HasSubstr("exec plugin \"my-plugin\""));
  EXPECT_THAT(result.message(), HasSubstr("command not found in PATH"));
  EXPECT_THAT(result.message(), HasSubstr("Install my-plugin from example.com"));
}

TEST_F(ExecTokenSourceTest, FromKubeconfigWithRelativeCommandAndClusterInfo) {
  dir_.script("kube/plugins/auth.sh", kCountingPlugin);
  const auto kubeconfig = dir_.write("kube/config", R"(
clusters:
- name: c
  cluster: {server: "https://c:6443", tls-server-name: api.internal}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./plugins/auth.sh
      args: [one, two]
      env:
      - {name: STATE_DIR, value: ")" + dir_.path().string() +
                                                        R"("}
      - {name: PLUGIN_VAR, value: from-kubeconfig}
      provideClusterInfo: true
      interactiveMode: Never
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)");
  const auto config = RestConfigLoader::loadKubeconfig({kubeconfig, std::nullopt}, env_,
                                                       {{}, [this] { return now_; }});
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->tokenSource->token().token, "tok-1-from-kubeconfig");
  EXPECT_EQ(config->tokenSource->token().token, "tok-1-from-kubeconfig");
  EXPECT_EQ(state("args"), "one two");
  const auto info = nlohmann::json::parse(state("info"));
  EXPECT_EQ(info.at("spec").at("cluster").at("server"), "https://c:6443");
  EXPECT_EQ(info.at("spec").at("cluster").at("tls-server-name"), "api.internal");
}

}  // namespace
}  // namespace leasehold::cluster

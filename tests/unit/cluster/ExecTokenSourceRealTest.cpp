// ExecTokenSource with real plugin scripts, bound to a real loop through attach() (so through
// AsyncProcessLauncher): the kubeconfig path end to end, a slow plugin next to a timer, the
// deadline, and the end of the binding. Bounds are generous (LoopRunner).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/steady_timer.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "LoopRunner.h"
#include "TemporaryDirectory.h"
#include "cluster/ExecTokenSource.h"
#include "cluster/RestConfigLoader.h"

namespace leasehold::cluster {
namespace {

using namespace std::chrono;
using testing::HasSubstr;

// Prints a token that says how many times the plugin ran and what PLUGIN_VAR was, and records
// its arguments and KUBERNETES_EXEC_INFO in $STATE_DIR.
constexpr const char* kCountingPlugin = R"(
n=$(cat "$STATE_DIR/count" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$STATE_DIR/count"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$STATE_DIR/info"
printf '%s' "$*" > "$STATE_DIR/args"
cat <<JSON
{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
 "status":{"token":"tok-$n-$PLUGIN_VAR","expirationTimestamp":"2026-11-30T12:00:00Z"}}
JSON
)";

class ExecTokenSourceRealTest : public testing::Test {
 protected:
  std::string state(const std::string& name) const {
    std::ifstream in(dir_.path() / name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  ExecPluginConfig plugin(const std::string& body) {
    ExecPluginConfig config;
    config.command = dir_.script("plugin.sh", body).string();
    config.env = {{"STATE_DIR", dir_.path().string()}};
    return config;
  }

  testing_support::TemporaryDirectory dir_;
  ExecCredentialPlugin::Environment env_{{"PATH", "/usr/bin:/bin"}};
  time::WallTime now_ = sys_days(2026y / November / 30) + 11h;
  LoopRunner loop_;
};

TEST_F(ExecTokenSourceRealTest, FromKubeconfigWithRelativeCommandAndClusterInfo) {
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
  const auto attachment = config->tokenSource->attach(loop_.io);
  ASSERT_TRUE(attachment);
  EXPECT_EQ(config->tokenSource->attach(loop_.io), attachment) << "one binding per loop";
  EXPECT_EQ(loop_.usableToken(*config->tokenSource).token, "tok-1-from-kubeconfig");
  EXPECT_EQ(loop_.usableToken(*config->tokenSource).token, "tok-1-from-kubeconfig");
  EXPECT_EQ(state("count"), "1\n");
  EXPECT_EQ(state("args"), "one two");
  const auto info = nlohmann::json::parse(state("info"));
  EXPECT_EQ(info.at("spec").at("cluster").at("server"), "https://c:6443");
  EXPECT_EQ(info.at("spec").at("cluster").at("tls-server-name"), "api.internal");
  EXPECT_EQ(info.at("spec").at("interactive"), false);
  EXPECT_THAT(config->tokenSource->describe(), HasSubstr("of user \"u\""));
}

TEST_F(ExecTokenSourceRealTest, ASlowPluginDoesNotHoldUpTheLoop) {
  ExecTokenSource source(
      ExecCredentialPlugin(plugin("sleep 1\n" + std::string(kCountingPlugin)), env_),
      [this] { return now_; });
  const auto attachment = source.attach(loop_.io);
  bool ready = false;
  source.whenUsable(seconds(30), [&ready](TokenWait) { ready = true; });
  boost::asio::steady_timer timer(loop_.io, milliseconds(50));
  bool fired = false;
  timer.async_wait([&fired](const boost::system::error_code&) { fired = true; });
  ASSERT_TRUE(loop_.runUntil([&] { return fired || ready; }));
  EXPECT_TRUE(fired);
  EXPECT_FALSE(ready) << "the loop waited for the plugin";
  ASSERT_TRUE(loop_.runUntil([&] { return ready; }));
  EXPECT_EQ(source.token().token, "tok-1-");
}

TEST_F(ExecTokenSourceRealTest, TheDeadlineKillsARealPlugin) {
  ExecTokenSource source(
      ExecCredentialPlugin(plugin("echo $$ > \"$STATE_DIR/pid\"\nexec sleep 30\n"), env_,
                           milliseconds(300)),
      [this] { return now_; });
  const auto attachment = source.attach(loop_.io);
  const auto start = steady_clock::now();
  const auto result = loop_.usableToken(source);
  EXPECT_LT(steady_clock::now() - start, seconds(10));
  EXPECT_FALSE(result.token);
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, HasSubstr("did not finish within 300 ms"));
  const auto pid = state("pid");
  ASSERT_FALSE(pid.empty());
  EXPECT_TRUE(loop_.runUntil([&] {
    return !std::filesystem::exists("/proc/" + pid.substr(0, pid.size() - 1));
  })) << "killed and reaped";
}

TEST_F(ExecTokenSourceRealTest, DroppingTheLastAttachmentKillsTheRun) {
  ExecTokenSource source(
      ExecCredentialPlugin(plugin("echo $$ > \"$STATE_DIR/pid\"\nexec sleep 30\n"), env_),
      [this] { return now_; });
  auto attachment = source.attach(loop_.io);
  source.whenUsable(seconds(30), [](TokenWait) { ADD_FAILURE() << "answered after detach"; });
  ASSERT_TRUE(loop_.runUntil([&] { return state("pid").size() > 1; }));
  const auto pid = state("pid").substr(0, state("pid").size() - 1);
  attachment.reset();
  EXPECT_TRUE(loop_.runUntil([&] { return !std::filesystem::exists("/proc/" + pid); }));
  EXPECT_FALSE(source.refreshing());
  EXPECT_THAT(source.token().warning.value_or(""), HasSubstr("not attached"));
}

}  // namespace
}  // namespace leasehold::cluster

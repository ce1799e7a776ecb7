// What ExecCredentialPlugin runs and what it makes of the way the process ended: pure, no
// process is started here (AsyncProcessLauncherTest and ExecTokenSourceTest run real ones).
#include "cluster/ExecCredentialPlugin.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "TemporaryDirectory.h"

namespace leasehold::cluster {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;
using testing::Not;
using testing::StartsWith;

const std::string kSecret = "s3cr3t-T0KEN-do-not-print";

class ExecCredentialPluginTest : public testing::Test {
 protected:
  ExecPluginConfig config(const std::string& command) {
    ExecPluginConfig c;
    c.command = command;
    c.args = {"--cluster", "dev"};
    c.env = {{"PLUGIN_VAR", kSecret}, {"BASE_VAR", "overridden"}};
    c.origin = "kubeconfig /k:9: users[0].user.exec";
    c.user = "deployer";
    c.baseDirectory = dir_.path();
    return c;
  }

  static std::string variable(const ProcessSpec& spec, const std::string& name) {
    for (const auto& entry : spec.environment) {
      if (entry.rfind(name + "=", 0) == 0) return entry.substr(name.size() + 1);
    }
    return "<unset>";
  }

  testing_support::TemporaryDirectory dir_;
  ExecCredentialPlugin::Environment env_{
      {"PATH", "/usr/bin:/bin"}, {"BASE_VAR", "base"}, {"OTHER_VAR", "kept"}};
};

TEST_F(ExecCredentialPluginTest, ProcessSpecCarriesArgsEnvAndExecInfo) {
  const auto path = dir_.script("plugin.sh", "true\n");
  const auto spec = ExecCredentialPlugin(config(path.string()), env_).processSpec();
  ASSERT_TRUE(spec) << spec.message();
  EXPECT_EQ(spec->path, path.string());
  EXPECT_EQ(spec->argv, (std::vector<std::string>{path.string(), "--cluster", "dev"}));
  EXPECT_EQ(variable(*spec, "BASE_VAR"), "overridden");  // the kubeconfig's env wins over ours
  EXPECT_EQ(variable(*spec, "OTHER_VAR"), "kept");
  EXPECT_EQ(variable(*spec, "PLUGIN_VAR"), kSecret);
  EXPECT_EQ(spec->maxOutputBytes, ExecCredentialPlugin::kMaxOutputBytes);
  const auto info = nlohmann::json::parse(variable(*spec, "KUBERNETES_EXEC_INFO"));
  EXPECT_EQ(info.at("kind"), "ExecCredential");
  EXPECT_EQ(info.at("apiVersion"), "client.authentication.k8s.io/v1");
  EXPECT_EQ(info.at("spec").at("interactive"), false);
  EXPECT_FALSE(info.at("spec").contains("cluster"));

  auto withCluster = config(path.string());
  withCluster.apiVersion = ExecCredential::kApiVersionV1Beta1;
  withCluster.clusterInfoJson = R"({"server":"https://c:6443"})";
  const auto spec2 = ExecCredentialPlugin(withCluster, env_).processSpec();
  ASSERT_TRUE(spec2) << spec2.message();
  const auto info2 = nlohmann::json::parse(variable(*spec2, "KUBERNETES_EXEC_INFO"));
  EXPECT_EQ(info2.at("apiVersion"), "client.authentication.k8s.io/v1beta1");
  EXPECT_EQ(info2.at("spec").at("cluster").at("server"), "https://c:6443");
}

TEST_F(ExecCredentialPluginTest, FindsTheCommandLikeClientGo) {
  dir_.script("bin/my-plugin", "true\n");
  dir_.script("plugins/auth.sh", "true\n");
  dir_.write("plugins/not-executable", "true\n");
  const std::string bin = (dir_.path() / "bin").string();
  struct Case {
    std::string command;
    std::string path;
    std::string found;  // empty: not found, then `message`
    std::string message;
  };
  const std::vector<Case> cases = {
      {"my-plugin", "/usr/bin:" + bin, bin + "/my-plugin", ""},
      {"./plugins/auth.sh", "/usr/bin", (dir_.path() / "./plugins/auth.sh").string(), ""},
      {(dir_.path() / "plugins/auth.sh").string(), "", (dir_.path() / "plugins/auth.sh").string(),
       ""},
      {"my-plugin", "/usr/bin:/bin", "", "command not found in PATH"},
      {"./plugins/not-executable", "/usr/bin", "", "not-executable is not an executable file"},
      {"./plugins/missing", "/usr/bin", "", "missing is not an executable file"},
  };
  for (const auto& c : cases) {
    auto plugin = config(c.command);
    plugin.installHint = "Install it from example.com";
    env_["PATH"] = c.path;
    const auto spec = ExecCredentialPlugin(plugin, env_).processSpec();
    if (!c.found.empty()) {
      ASSERT_TRUE(spec) << c.command << ": " << spec.message();
      EXPECT_EQ(spec->path, c.found) << c.command;
      continue;
    }
    ASSERT_FALSE(spec) << c.command;
    EXPECT_THAT(spec.message(),
                StartsWith("exec plugin \"" + c.command + "\" of user \"deployer\""));
    EXPECT_THAT(spec.message(), HasSubstr(c.message));
    EXPECT_THAT(spec.message(), HasSubstr("Install it from example.com"));
  }
}

TEST_F(ExecCredentialPluginTest, InterpretsHowTheProcessEnded) {
  const std::string good =
      R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
          "status":{"token":"tok","expirationTimestamp":"2026-11-30T12:00:00Z"}})";
  auto exit = [](std::optional<int> code, std::string output = "") {
    ProcessExit e;
    e.exitCode = code;
    e.output = std::move(output);
    return e;
  };
  struct Case {
    const char* what;
    ProcessExit exit;
    bool timedOut;
    std::string message;  // empty: a credential
  };
  ProcessExit signalled;
  signalled.signal = 9;
  signalled.output = kSecret;
  ProcessExit notStarted;
  notStarted.startFailure = "cannot start: Permission denied";
  ProcessExit tooLarge = exit(0, kSecret);
  tooLarge.outputTooLarge = true;
  ProcessExit readFailed = exit(0, kSecret);
  readFailed.readFailure = "cannot read its output: Bad file descriptor";
  const std::vector<Case> cases = {
      {"answered", exit(0, good), false, ""},
      {"killed at the deadline (after printing)", exit(0, good), true,
       "did not finish within 300 ms"},
      {"killed at the deadline", signalled, true, "did not finish within 300 ms"},
      {"not started", notStarted, false, "cannot start: Permission denied"},
      {"too much output", tooLarge, false, "printed more than 1048576 bytes"},
      {"read failure", readFailed, false, "cannot read its output"},
      {"signal", signalled, false, "killed by signal 9"},
      {"exit 3", exit(3, kSecret), false, "exited with status 3"},
      {"reaped elsewhere", exit(std::nullopt), false, "exit status unknown"},
      {"not JSON", exit(0, "{\"status\": {\"token\": \"" + kSecret), false, "not valid JSON"},
  };
  const ExecCredentialPlugin plugin(config("aws"), env_, 300ms);
  for (const auto& c : cases) {
    const auto result = plugin.interpret(c.exit, c.timedOut);
    if (c.message.empty()) {
      ASSERT_TRUE(result) << c.what << ": " << result.message();
      EXPECT_EQ(result->token, "tok");
      continue;
    }
    ASSERT_FALSE(result) << c.what;
    EXPECT_THAT(result.message(), StartsWith(plugin.describe() + ": ")) << c.what;
    EXPECT_THAT(result.message(), HasSubstr(c.message)) << c.what;
    EXPECT_THAT(result.message(), Not(HasSubstr(kSecret))) << c.what;
  }
}

TEST_F(ExecCredentialPluginTest, DescribeNamesCommandUserAndOriginNeverEnv) {
  const ExecCredentialPlugin plugin(config("aws"), env_);
  EXPECT_EQ(plugin.describe(),
            "exec plugin \"aws\" of user \"deployer\" (kubeconfig /k:9: users[0].user.exec)");
  EXPECT_EQ(plugin.timeout(), ExecCredentialPlugin::kDefaultTimeout);
}

}  // namespace
}  // namespace leasehold::cluster

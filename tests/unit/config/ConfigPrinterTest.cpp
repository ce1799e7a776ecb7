#include "config/ConfigPrinter.h"

#include <gtest/gtest.h>

#include "TemporaryDirectory.h"
#include "config/ConfigLoader.h"

namespace leasehold::config {
namespace {

using namespace std::chrono_literals;

TEST(ConfigPrinter, PrintsEveryKeyWithDefaults) {
  Config config;
  config.leaseName = "my-app";
  config.identity = "web-0_3f9a1c2b";
  EXPECT_EQ(printConfig(config),
            "leaseName: my-app\n"
            "leaseNamespace: ~\n"
            "identity: web-0_3f9a1c2b\n"
            "leaseDuration: 15s\n"
            "renewDeadline: 10s\n"
            "retryPeriod: 2s\n"
            "releaseCooldown: 15s\n"
            "kubeconfig: ~\n"
            "context: ~\n"
            "httpAddress: 127.0.0.1:4040\n"
            "probeAddress: 0.0.0.0:9102\n"
            "statusFile: \"\"\n"
            "podLabel: \"\"\n"
            "followerMode: watch\n"
            "logFormat: text\n"
            "logLevel: info\n"
            "store: kubernetes\n");
}

TEST(ConfigPrinter, OutputLoadsBackAsTheSameConfig) {
  Config config;
  config.leaseName = "db";
  config.leaseNamespace = "prod";
  config.identity = "me: with colon";
  config.timings.leaseDuration = 30s;
  config.timings.renewDeadline = 20s;
  config.timings.retryPeriod = 1500ms;
  config.releaseCooldown = 90s;
  config.kubeconfig = "/home/me/.kube/config";
  config.context = "kind-dev";
  config.httpAddress = {"::1", 8080};
  config.statusFile = "/run/leader.json";
  config.podLabel = "example.com/leader";
  config.followerMode = FollowerMode::Poll;
  config.logFormat = LogFormat::Json;
  config.logLevel = LogLevel::Warn;

  const auto text = printConfig(config);
  EXPECT_NE(text.find("retryPeriod: 1.5s"), std::string::npos) << text;
  EXPECT_NE(text.find("httpAddress: \"[::1]:8080\""), std::string::npos) << text;

  testing_support::TemporaryDirectory dir;
  const auto file = dir.write("printed.yaml", text);
  const auto outcome = ConfigLoader({}).load({"--config", file.string()});
  ASSERT_TRUE(std::holds_alternative<Config>(outcome)) << std::get<ConfigError>(outcome).message;
  const auto& back = std::get<Config>(outcome);
  EXPECT_EQ(back.leaseName, config.leaseName);
  EXPECT_EQ(back.leaseNamespace, config.leaseNamespace);
  EXPECT_EQ(back.identity, config.identity);
  EXPECT_EQ(back.timings.leaseDuration, config.timings.leaseDuration);
  EXPECT_EQ(back.timings.renewDeadline, config.timings.renewDeadline);
  EXPECT_EQ(back.timings.retryPeriod, config.timings.retryPeriod);
  EXPECT_EQ(back.releaseCooldown, config.releaseCooldown);
  EXPECT_EQ(back.kubeconfig, config.kubeconfig);
  EXPECT_EQ(back.context, config.context);
  EXPECT_EQ(back.httpAddress, config.httpAddress);
  EXPECT_EQ(back.probeAddress, config.probeAddress);
  EXPECT_EQ(back.statusFile, config.statusFile);
  EXPECT_EQ(back.podLabel, config.podLabel);
  EXPECT_EQ(back.followerMode, config.followerMode);
  EXPECT_EQ(back.logFormat, config.logFormat);
  EXPECT_EQ(back.logLevel, config.logLevel);
}

}  // namespace
}  // namespace leasehold::config

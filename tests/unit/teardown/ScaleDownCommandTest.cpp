// `leasehold scale-down`'s command line: the flags it takes (both spellings), the usage errors
// naming the flag, and the failures before any request (exit 2, one line).
#include "teardown/ScaleDownCommand.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

namespace leasehold::teardown {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

TEST(ScaleDownCommandTest, ParsesEveryFlag) {
  const auto parsed =
      ScaleDownCommand::parse({"--deployment", "demo", "--namespace=shop", "--timeout", "45s",
                               "--request-timeout=2s", "--kubeconfig", "/k", "--context=c"});
  ASSERT_TRUE(std::holds_alternative<ScaleDownArgs>(parsed)) << std::get<std::string>(parsed);
  const auto& a = std::get<ScaleDownArgs>(parsed);
  EXPECT_EQ(a.options.deployment, "demo");
  EXPECT_EQ(a.options.ns, "shop");
  EXPECT_EQ(a.options.timeout, 45s);
  EXPECT_EQ(a.options.requestTimeout, 2s);
  EXPECT_EQ(a.kubeconfig, "/k");
  EXPECT_EQ(a.context, "c");
  EXPECT_FALSE(a.help);

  const auto defaults = std::get<ScaleDownArgs>(ScaleDownCommand::parse({"--deployment=d"}));
  EXPECT_EQ(defaults.options.ns, "");
  EXPECT_EQ(defaults.options.timeout, 60s);
  EXPECT_EQ(defaults.options.requestTimeout, 5s);
  EXPECT_FALSE(defaults.kubeconfig.has_value());
  EXPECT_FALSE(defaults.context.has_value());
}

TEST(ScaleDownCommandTest, InAPodItUsesTheServiceAccount) {
  // No --kubeconfig, no $KUBECONFIG, the in-cluster variables set (the hook Job's pod): the
  // ServiceAccount's files, which this machine lacks: exit 2 naming them, before any request.
  std::ostringstream out, err;
  EXPECT_EQ(ScaleDownCommand::run(
                {"--deployment", "d"}, out, err,
                {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}),
            2);
  EXPECT_THAT(err.str(), HasSubstr("/var/run/secrets/kubernetes.io/serviceaccount"));
}

TEST(ScaleDownCommandTest, UsageErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string problem;
  };
  const std::vector<Case> cases{
      {{}, "--deployment NAME is required"},
      {{"--deployment"}, "--deployment needs a value"},
      {{"--deployment", "Demo"}, "--deployment \"Demo\": "},
      {{"--deployment", "d", "--namespace", "a.b"}, "--namespace \"a.b\": "},
      {{"--deployment", "d", "--timeout", "10"}, "--timeout 10: "},
      {{"--deployment", "d", "--timeout=0s"}, "--timeout must be more than 0, got 0s"},
      {{"--deployment", "d", "--request-timeout", "1ns"}, "--request-timeout is under 1ms"},
      {{"--deployment", "d", "--replicas", "0"}, "unknown option --replicas"},
      {{"--deployment", "d", "extra"}, "unexpected argument extra"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    const auto parsed = ScaleDownCommand::parse(c.args);
    ASSERT_TRUE(std::holds_alternative<std::string>(parsed));
    EXPECT_THAT(std::get<std::string>(parsed), HasSubstr(c.problem));

    std::ostringstream out, err;
    EXPECT_EQ(ScaleDownCommand::run(c.args, out, err, {}), 2);
    EXPECT_EQ(out.str(), "");
    EXPECT_THAT(err.str(), HasSubstr("leasehold scale-down: " + c.problem));
    EXPECT_THAT(err.str(), HasSubstr("see leasehold scale-down --help)\n"));
  }
}

TEST(ScaleDownCommandTest, HelpAndNoCluster) {
  std::ostringstream out, err;
  EXPECT_EQ(ScaleDownCommand::run({"--help"}, out, err, {}), 0);
  EXPECT_THAT(out.str(), HasSubstr("Usage: leasehold scale-down --deployment NAME"));
  EXPECT_THAT(out.str(), HasSubstr("deployments/scale"));
  EXPECT_EQ(err.str(), "");

  // No kubeconfig at that path: exit 2 before any request, the file named.
  std::ostringstream out2, err2;
  EXPECT_EQ(ScaleDownCommand::run({"--deployment", "d", "--kubeconfig", "/nonexistent/kc"}, out2,
                                  err2, {}),
            2);
  EXPECT_THAT(err2.str(), HasSubstr("/nonexistent/kc"));
}

TEST(ScaleDownCommandTest, InvokedOnlyAsTheFirstWord) {
  const char* yes[] = {"leasehold", "scale-down", "--deployment", "d"};
  const char* no[] = {"leasehold", "--lease-name", "scale-down"};
  EXPECT_TRUE(ScaleDownCommand::invoked(4, yes));
  EXPECT_FALSE(ScaleDownCommand::invoked(3, no));
  EXPECT_FALSE(ScaleDownCommand::invoked(1, yes));
}

}  // namespace
}  // namespace leasehold::teardown

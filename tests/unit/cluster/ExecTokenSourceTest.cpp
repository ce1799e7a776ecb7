// ExecTokenSource's refresh policy on a FakeClock with a fake launcher: no process runs, the test
// ends each plugin run by hand. ExecTokenSourceRealTest runs real plugin scripts.
#include "cluster/ExecTokenSource.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "FakeClock.h"
#include "FakeProcessLauncher.h"
#include "TemporaryDirectory.h"

namespace leasehold::cluster {
namespace {

using namespace std::chrono;
using testing::HasSubstr;
using testing::Not;

// What a plugin prints: a token, optionally with an expiry.
std::string answer(const std::string& token, std::optional<time::WallTime> expiry = std::nullopt) {
  nlohmann::json status = {{"token", token}};
  if (expiry) status["expirationTimestamp"] = time::formatMicroTime(*expiry);
  return nlohmann::json{{"kind", "ExecCredential"},
                        {"apiVersion", "client.authentication.k8s.io/v1"},
                        {"status", status}}
      .dump();
}

// One whenUsable() call: whether and how it was answered.
struct Wait {
  bool answered = false;
  TokenWait result;
  std::function<void(TokenWait)> callback() {
    return [this](TokenWait w) {
      EXPECT_FALSE(answered) << "answered twice";
      answered = true;
      result = std::move(w);
    };
  }
};

class ExecTokenSourceTest : public testing::Test {
 protected:
  ExecPluginConfig pluginConfig() {
    ExecPluginConfig config;
    config.command = dir_.script("plugin.sh", "exit 0\n").string();
    config.origin = "kubeconfig /k:9: users[0].user.exec";
    config.user = "deployer";
    return config;
  }
  ExecCredentialPlugin plugin() { return ExecCredentialPlugin(pluginConfig(), env_); }

  time::WallTime wallIn(time::Duration d) const {
    return clock_.wallNow() + duration_cast<microseconds>(d);
  }
  // Advances the clock in steps of `step`, asking for the token as requests would; every answer
  // must come at once and be `expected`.
  void requestsFor(time::Duration period, const std::string& expected,
                   time::Duration step = milliseconds(100)) {
    for (time::Duration t{}; t < period; t += step) {
      Wait wait;
      source_.whenUsable(milliseconds(750), wait.callback());
      ASSERT_TRUE(wait.answered) << "a request waited with a usable token at +"
                                 << duration_cast<milliseconds>(t).count() << " ms";
      EXPECT_EQ(source_.token().token, expected);
      clock_.advance(step);
    }
  }
  // The first credential, expiring `lifetime` from now.
  void firstToken(time::Duration lifetime, const std::string& token = "tok-1") {
    Wait wait;
    source_.whenUsable(milliseconds(750), wait.callback());
    ASSERT_FALSE(wait.answered);
    launcher_.print(answer(token, wallIn(lifetime)));
    ASSERT_TRUE(wait.answered);
    EXPECT_FALSE(wait.result.problem);
    ASSERT_EQ(source_.token().token, token);
  }

  testing_support::TemporaryDirectory dir_;
  ExecCredentialPlugin::Environment env_{{"PATH", "/usr/bin:/bin"}};
  time::FakeClock clock_;
  FakeProcessLauncher launcher_;
  ExecTokenSource source_{plugin(), clock_, launcher_};
};

TEST_F(ExecTokenSourceTest, TheFirstRequestWaitsForTheFirstRun) {
  Wait wait;
  source_.whenUsable(milliseconds(750), wait.callback());
  EXPECT_FALSE(wait.answered);
  ASSERT_EQ(launcher_.startedCount(), 1u);
  clock_.advance(milliseconds(200));
  launcher_.print(answer("tok-1", wallIn(hours(1))));
  ASSERT_TRUE(wait.answered);
  EXPECT_FALSE(wait.result.problem);
  EXPECT_EQ(wait.result.waited, milliseconds(200));
  const auto result = source_.token();
  EXPECT_EQ(result.token, "tok-1");
  EXPECT_FALSE(result.warning);
  EXPECT_EQ(launcher_.startedCount(), 1u);
}

TEST_F(ExecTokenSourceTest, RefreshLead) {
  // A quarter of the lifetime, at least the timeout (10 s) + 1 s, at most half.
  const std::vector<std::pair<time::Duration, time::Duration>> cases = {
      {hours(1), minutes(15)},    {minutes(15), seconds(225)}, {seconds(60), seconds(15)},
      {seconds(30), seconds(11)}, {seconds(12), seconds(6)},   {seconds(2), seconds(1)},
  };
  for (const auto& [lifetime, lead] : cases) {
    EXPECT_EQ(source_.refreshLead(lifetime), lead)
        << duration_cast<seconds>(lifetime).count() << " s";
  }
}

TEST_F(ExecTokenSourceTest, RefreshesAheadOfExpiryInTheBackground) {
  firstToken(hours(1));
  // Cached: no run until 15 minutes before the expiry.
  clock_.advance(minutes(45) - seconds(1));
  EXPECT_EQ(source_.token().token, "tok-1");
  EXPECT_EQ(launcher_.startedCount(), 1u);
  clock_.advance(seconds(1));
  EXPECT_EQ(source_.token().token, "tok-1");  // still sent while the refresh runs
  ASSERT_EQ(launcher_.startedCount(), 2u);
  EXPECT_TRUE(source_.refreshing());
  requestsFor(seconds(4), "tok-1");
  EXPECT_EQ(launcher_.startedCount(), 2u) << "one refresh at a time";
  launcher_.print(answer("tok-2", wallIn(hours(1))));
  EXPECT_EQ(source_.token().token, "tok-2");
  EXPECT_FALSE(source_.refreshing());
}

TEST_F(ExecTokenSourceTest, ASlowRefreshOfAShortLivedTokenNeverMakesARequestWait) {
  // The integration scenario in small: 12 s credentials, a plugin that takes 4 s to refresh.
  firstToken(seconds(12));
  for (int refresh = 2; refresh <= 4; ++refresh) {
    const std::string current = "tok-" + std::to_string(refresh - 1);
    requestsFor(seconds(6), current);
    EXPECT_FALSE(source_.refreshing());
    EXPECT_EQ(source_.token().token, current);  // 6 s before the expiry: starts the refresh
    ASSERT_TRUE(source_.refreshing()) << "refresh " << refresh;
    requestsFor(seconds(4), current);  // the plugin is slow
    launcher_.print(answer("tok-" + std::to_string(refresh), wallIn(seconds(12))));
    EXPECT_EQ(source_.token().token, "tok-" + std::to_string(refresh));
  }
  EXPECT_EQ(launcher_.startedCount(), 4u);
}

TEST_F(ExecTokenSourceTest, PastTheExpiryRequestsWaitForTheRunningRefresh) {
  firstToken(seconds(12));
  clock_.advance(seconds(6));
  EXPECT_EQ(source_.token().token, "tok-1");  // starts the refresh
  clock_.advance(seconds(6));                 // expired; the plugin is still running
  std::vector<Wait> waits(3);
  for (auto& w : waits)
    source_.whenUsable(seconds(2), w.callback());
  for (const auto& w : waits)
    EXPECT_FALSE(w.answered);
  EXPECT_FALSE(source_.token().token) << "an expired token is not sent";
  EXPECT_EQ(launcher_.startedCount(), 2u);
  clock_.advance(milliseconds(300));
  launcher_.print(answer("tok-2", wallIn(seconds(12))));
  for (const auto& w : waits) {
    EXPECT_TRUE(w.answered);
    EXPECT_FALSE(w.result.problem);
    EXPECT_EQ(w.result.waited, milliseconds(300));
  }
  EXPECT_EQ(source_.token().token, "tok-2");
}

TEST_F(ExecTokenSourceTest, AWaitEndsAtTheRequestsDeadline) {
  Wait first, second;
  source_.whenUsable(milliseconds(750), first.callback());
  clock_.advance(milliseconds(250));
  source_.whenUsable(milliseconds(750), second.callback());
  clock_.advance(milliseconds(500));
  ASSERT_TRUE(first.answered);
  EXPECT_FALSE(second.answered);
  ASSERT_TRUE(first.result.problem);
  EXPECT_THAT(*first.result.problem, HasSubstr(source_.describe()));
  EXPECT_THAT(*first.result.problem, HasSubstr("no credential within 750ms"));
  EXPECT_THAT(*first.result.problem, HasSubstr("still running"));
  EXPECT_EQ(first.result.waited, milliseconds(750));
  clock_.advance(milliseconds(250));
  ASSERT_TRUE(second.answered);
  EXPECT_TRUE(second.result.problem);
  // The run goes on; a later request gets its token.
  Wait third;
  source_.whenUsable(milliseconds(750), third.callback());
  launcher_.print(answer("tok-1"));
  EXPECT_TRUE(third.answered);
  EXPECT_FALSE(third.result.problem);
  EXPECT_EQ(source_.token().token, "tok-1");
  EXPECT_EQ(launcher_.startedCount(), 1u);
}

TEST_F(ExecTokenSourceTest, ThePluginIsKilledAtItsDeadline) {
  Wait wait;
  source_.whenUsable(seconds(30), wait.callback());
  clock_.advance(ExecCredentialPlugin::kDefaultTimeout - milliseconds(1));
  EXPECT_FALSE(wait.answered);
  EXPECT_FALSE(launcher_.started(0).killed);
  clock_.advance(milliseconds(1));
  EXPECT_TRUE(launcher_.started(0).abandoned) << "killed, and not waited for";
  ASSERT_TRUE(wait.answered);
  EXPECT_FALSE(wait.result.problem);  // answered: token() says what went wrong
  const auto result = source_.token();
  EXPECT_FALSE(result.token);
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, HasSubstr(source_.describe() + ": did not finish within 10000 ms"));
  EXPECT_FALSE(source_.refreshing());
}

TEST_F(ExecTokenSourceTest, AFailureIsReportedOnceAndNotRetriedForFiveSeconds) {
  Wait wait;
  source_.whenUsable(milliseconds(750), wait.callback());
  ProcessExit failed;
  failed.exitCode = 3;
  launcher_.finish(failed);
  ASSERT_TRUE(wait.answered);
  auto result = source_.token();
  EXPECT_FALSE(result.token);
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, HasSubstr("exited with status 3"));

  clock_.advance(seconds(4));
  Wait again;
  source_.whenUsable(milliseconds(750), again.callback());
  EXPECT_TRUE(again.answered) << "nothing to wait for while backing off";
  result = source_.token();
  EXPECT_FALSE(result.token);
  EXPECT_FALSE(result.warning);
  EXPECT_EQ(launcher_.startedCount(), 1u);

  clock_.advance(seconds(1));
  Wait retry;
  source_.whenUsable(milliseconds(750), retry.callback());
  EXPECT_FALSE(retry.answered);
  EXPECT_EQ(launcher_.startedCount(), 2u);
  launcher_.print(answer("tok-1"));
  EXPECT_EQ(source_.token().token, "tok-1");
}

TEST_F(ExecTokenSourceTest, AFailedBackgroundRefreshKeepsTheCurrentToken) {
  firstToken(seconds(60));
  clock_.advance(seconds(45));  // 15 s lead
  EXPECT_EQ(source_.token().token, "tok-1");
  ProcessExit failed;
  failed.signal = 9;
  launcher_.finish(failed);
  auto result = source_.token();
  EXPECT_EQ(result.token, "tok-1");
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, HasSubstr("killed by signal 9"));
  requestsFor(seconds(5), "tok-1");  // no retry for 5 s
  EXPECT_EQ(launcher_.startedCount(), 2u);
  EXPECT_EQ(source_.token().token, "tok-1");
  ASSERT_EQ(launcher_.startedCount(), 3u);
  launcher_.print(answer("tok-2", wallIn(seconds(60))));
  EXPECT_EQ(source_.token().token, "tok-2");
}

TEST_F(ExecTokenSourceTest, AfterA401RequestsWaitForAFreshRun) {
  firstToken(hours(1));
  struct Case {
    const char* when;
    time::Duration later;
  };
  // Idle, the 401 starts a run; during a background refresh, requests wait for that one.
  int n = 1;
  for (const auto& c : {Case{"idle", seconds(1)}, Case{"during a refresh", minutes(45)}}) {
    clock_.advance(c.later);
    EXPECT_EQ(source_.token().token, "tok-" + std::to_string(n)) << c.when;
    source_.invalidate();
    Wait wait;
    source_.whenUsable(milliseconds(750), wait.callback());
    EXPECT_FALSE(wait.answered) << c.when;
    EXPECT_EQ(launcher_.runningCount(), 1u) << c.when;
    launcher_.print(answer("tok-" + std::to_string(++n), wallIn(hours(1))));
    EXPECT_TRUE(wait.answered) << c.when;
    EXPECT_EQ(source_.token().token, "tok-" + std::to_string(n)) << c.when;
  }
  EXPECT_EQ(launcher_.startedCount(), 3u);
}

TEST_F(ExecTokenSourceTest, WithoutExpiryTheTokenIsKeptUntilA401) {
  firstToken(hours(1));
  clock_.advance(hours(1));
  EXPECT_FALSE(source_.token().token);
  launcher_.print(answer("forever"));
  requestsFor(hours(10), "forever", minutes(10));
  EXPECT_EQ(launcher_.startedCount(), 2u);
}

TEST_F(ExecTokenSourceTest, AnAlreadyExpiredCredentialIsAFailure) {
  Wait wait;
  source_.whenUsable(milliseconds(750), wait.callback());
  launcher_.print(answer("stale", wallIn(-seconds(1))));
  ASSERT_TRUE(wait.answered);
  const auto result = source_.token();
  EXPECT_FALSE(result.token);
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, HasSubstr("expired at 2026-11-30T09:59:59"));
  EXPECT_EQ(launcher_.startedCount(), 1u) << "backs off like any failure";
}

TEST_F(ExecTokenSourceTest, ClientCertificateObjectChangesOnlyWithTheCertificate) {
  const std::string cert =
      R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
      "status":{"clientCertificateData":"CERT PEM","clientKeyData":"KEY PEM"}})";
  Wait wait;
  source_.whenUsable(milliseconds(750), wait.callback());
  launcher_.print(cert);
  const auto first = source_.token();
  EXPECT_FALSE(first.token);
  ASSERT_TRUE(first.clientCertificate);
  EXPECT_EQ(first.clientCertificate->certificatePem, "CERT PEM");
  EXPECT_EQ(first.clientCertificate->keyPem, "KEY PEM");
  struct Case {
    std::string output;
    bool same;
    bool none;
  };
  std::string rotated = cert;
  rotated.replace(rotated.find("CERT PEM"), 8, "NEW CERT");
  for (const auto& c : std::vector<Case>{
           {cert, true, false}, {rotated, false, false}, {answer("tok"), false, true}}) {
    const auto before = source_.token().clientCertificate;
    source_.invalidate();
    source_.whenUsable(milliseconds(750), [](TokenWait) {});
    launcher_.print(c.output);
    const auto after = source_.token().clientCertificate;
    EXPECT_EQ(after == nullptr, c.none) << c.output;
    if (!c.none) {
      EXPECT_EQ(after == before, c.same) << c.output;
    }
  }
}

TEST_F(ExecTokenSourceTest, ACommandThatCannotBeFoundIsReportedAtOnce) {
  auto config = pluginConfig();
  config.command = "no-such-plugin";
  ExecTokenSource source(ExecCredentialPlugin(config, env_), clock_, launcher_);
  Wait wait;
  source.whenUsable(milliseconds(750), wait.callback());
  EXPECT_TRUE(wait.answered);
  const auto result = source.token();
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, HasSubstr("exec plugin \"no-such-plugin\" of user \"deployer\""));
  EXPECT_THAT(*result.warning, HasSubstr("command not found in PATH"));
  EXPECT_EQ(launcher_.startedCount(), 0u);
}

TEST_F(ExecTokenSourceTest, WithoutALoopThereIsNothingToRun) {
  ExecTokenSource unattached(plugin());
  Wait wait;
  unattached.whenUsable(milliseconds(750), wait.callback());
  EXPECT_TRUE(wait.answered);
  const auto result = unattached.token();
  EXPECT_FALSE(result.token);
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, HasSubstr("not attached to the event loop"));
}

TEST_F(ExecTokenSourceTest, DestroyingTheSourceKillsTheRun) {
  {
    ExecTokenSource source(plugin(), clock_, launcher_);
    source.whenUsable(milliseconds(750), [](TokenWait) { ADD_FAILURE() << "answered"; });
    ASSERT_EQ(launcher_.runningCount(), 1u);
  }
  EXPECT_TRUE(launcher_.started(0).abandoned);
  clock_.advance(seconds(30));  // no timer of the source is left to fire
}

}  // namespace
}  // namespace leasehold::cluster

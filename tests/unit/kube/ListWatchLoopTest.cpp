// ListWatchLoop on FakeApiClient and FakeClock: what LeaseWatchTest does not reach through
// LeaseWatch (which never stops and always selects by name): the selector and the collection
// are sent as given, the problem lines name the subject, and stop() ends the watch and a
// pending retry so that nothing more is sent or told until start() lists again.
#include "kube/ListWatchLoop.h"

#include <gtest/gtest.h>

#include <vector>

#include "FakeApiClient.h"
#include "LeaseJson.h"

namespace leasehold::testing_support {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using Log = std::vector<std::string>;

const std::string kSelector = "labelSelector=leasehold.io%2Fgroup%3Dwork";
const std::string kGroupListPath = std::string(kCollection) + "?" + kSelector;

std::string groupWatchPath(const std::string& rv) {
  return std::string(kCollection) + "?allowWatchBookmarks=true&" + kSelector +
         "&resourceVersion=" + rv + "&timeoutSeconds=300&watch=true";
}

class ListWatchLoopTest : public ::testing::Test {
 protected:
  ListWatchLoopTest() {
    kube::ListWatchLoopOptions o;
    o.collectionPath = kCollection;
    o.selector = kSelector;
    o.subject = "group watch";
    o.watchTimeoutSeconds = 300;
    o.onProblem = [this](const std::string& p) { problems.push_back(p); };
    kube::ListWatchLoopCallbacks cb;
    cb.onList = [this](const std::string& body, std::string& rv, std::string& error) {
      kube::LeaseListResult result;
      if (!kube::decodeLeaseList(body, "l", result, error)) return false;
      rv = result.resourceVersion;
      log.push_back("listed " + rv);
      return true;
    };
    cb.onEvent = [this](const kube::WatchEvent& e) { log.push_back("event " + e.resourceVersion); };
    cb.onHealth = [this](bool healthy) { log.push_back(healthy ? "healthy" : "unhealthy"); };
    loop = std::make_unique<kube::ListWatchLoop>(api, clock, std::move(o), std::move(cb),
                                                 [] { return 0.0; });
  }
  ~ListWatchLoopTest() override { loop.reset(); }

  time::FakeClock clock;
  FakeApiClient api{clock};
  Log log;
  std::vector<std::string> problems;
  std::unique_ptr<kube::ListWatchLoop> loop;
};

TEST_F(ListWatchLoopTest, SendsTheSelectorAndNamesTheSubject) {
  api.expect("GET", kGroupListPath).verb("list").respond(403, statusBody(403, "Forbidden", "no"));
  loop->start();
  clock.runDue();
  EXPECT_THAT(log, ElementsAre("unhealthy"));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("group watch unavailable, polling instead: list: ", 0), 0u)
      << problems[0];
  // Denied: the next LIST waits a second (LeaseWatchTest has the doubling to a minute).
  api.expect("GET", kGroupListPath).verb("list").respond(200, leaseListBody("12", "a", "10"));
  auto s = api.expect("GET", groupWatchPath("12")).verb("watch").stream();
  clock.advance(999ms);
  EXPECT_FALSE(s->opened());
  clock.advance(1ms);
  ASSERT_TRUE(s->opened());
  s->open();
  s->send(watchEvent("MODIFIED", "b", "13"));
  EXPECT_THAT(log, ElementsAre("unhealthy", "listed 12", "healthy", "event 13"));
  EXPECT_THAT(problems, ElementsAre(problems[0], "group watch restored"));
}

TEST_F(ListWatchLoopTest, StopEndsTheWatchAndTheRetryUntilStartedAgain) {
  api.expect("GET", kGroupListPath).respond(200, leaseListBody("12", "a", "10"));
  auto s = api.expect("GET", groupWatchPath("12")).stream();
  loop->start();
  clock.runDue();
  s->open();
  loop->stop();
  EXPECT_TRUE(s->cancelled());

  // Stopped while a retry waits: the retry is not sent.
  api.expect("GET", kGroupListPath).respond(500, statusBody(500, "InternalError", "etcd"));
  loop->start();
  clock.runDue();
  const std::size_t sent = api.requests().size();
  loop->stop();
  clock.advance(120s);
  EXPECT_EQ(api.requests().size(), sent);
  EXPECT_THAT(log, ElementsAre("listed 12", "healthy", "unhealthy"));

  api.expect("GET", kGroupListPath).respond(200, leaseListBody("30", "a", "10"));
  auto next = api.expect("GET", groupWatchPath("30")).stream();
  loop->start();
  clock.runDue();
  EXPECT_TRUE(next->opened());
  EXPECT_THAT(log, ElementsAre("listed 12", "healthy", "unhealthy", "listed 30"));
}

}  // namespace
}  // namespace leasehold::testing_support

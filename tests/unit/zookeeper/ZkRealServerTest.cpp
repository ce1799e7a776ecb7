// ZkSession against a real ZooKeeper, by hand: skipped unless LEASEHOLD_ZK_TEST_SERVERS names
// one ("localhost:2181", looked up through WorkerHostResolver as in production). With
// LEASEHOLD_ZK_TEST_RESTART set to a shell command that restarts the server (blocking until it
// listens again), the session must survive the restart with the same id. The server needs a
// maxSessionTimeout of at least 20 s for that (the session asks for 20 s). With
// LEASEHOLD_ZK_TEST_TLS_SERVERS (a secureClientPort) and LEASEHOLD_ZK_TEST_CA (the file of the CA
// that signed the server's certificate), TLS is checked too: verified, and refused for a name
// the certificate does not carry.
#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "EventLoop.h"
#include "net/WorkerHostResolver.h"
#include "runtime/AsioClock.h"
#include "runtime/BlockingWorker.h"
#include "zookeeper/ZkSession.h"

namespace leasehold::zookeeper {
namespace {

using namespace std::chrono_literals;
using net::test::runUntil;

class ZkRealServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* servers = std::getenv("LEASEHOLD_ZK_TEST_SERVERS");
    if (!servers) GTEST_SKIP() << "LEASEHOLD_ZK_TEST_SERVERS is not set";
    servers_ = servers;
  }
  std::unique_ptr<ZkSession> open(const std::string& suffix,
                                  std::optional<ZkSession::Credentials> credentials,
                                  std::vector<ZkSessionEvent>& events,
                                  std::optional<net::TlsOptions> tls = std::nullopt,
                                  const std::string& servers = "") {
    ZkSession::Options o;
    o.connectString = (servers.empty() ? servers_ : servers) + suffix;
    o.tls = std::move(tls);
    o.sessionTimeout = 20s;
    o.requestTimeout = 5s;
    o.credentials = std::move(credentials);
    o.resolver = &resolver_;
    auto s = std::make_unique<ZkSession>(io_, clock_, std::move(o));
    EXPECT_FALSE(s->configurationError());
    s->setSessionHandler([&events](const ZkSessionEvent& e) {
      std::printf(
          "session event %d id 0x%llx new %d timeout %lldms server %s %s\n",
          static_cast<int>(e.kind), static_cast<unsigned long long>(e.sessionId), e.newSession,
          static_cast<long long>(
              std::chrono::duration_cast<std::chrono::milliseconds>(e.negotiatedTimeout).count()),
          e.server.c_str(), e.detail.c_str());
      events.push_back(e);
    });
    s->open();
    return s;
  }
  template <typename T>
  T wait(std::optional<T>& slot) {
    EXPECT_TRUE(runUntil(
        io_, [&] { return slot.has_value(); }, 20s));
    return slot.value_or(T{});
  }

  boost::asio::io_context io_;
  runtime::AsioClock clock_{io_, 1.0};
  runtime::BlockingWorker worker_{
      [this](std::function<void()> f) { boost::asio::post(io_, std::move(f)); }};
  net::WorkerHostResolver resolver_{worker_};
  std::string servers_;
};

TEST_F(ZkRealServerTest, EphemeralSequentialWatchesPingRestartAndClose) {
  std::vector<ZkSessionEvent> events;
  auto session = open("", std::nullopt, events);
  ASSERT_TRUE(runUntil(
      io_, [&] { return !events.empty(); }, 20s));
  ASSERT_EQ(events[0].kind, ZkSessionEvent::Kind::kConnected);
  const std::int64_t id = events[0].sessionId;

  std::optional<ZkResult> made;
  session->create("/leasehold-zk-check", "", ZkCreateMode::kPersistent,
                  [&](ZkResult r, std::string, ZkStat) { made = r; });
  const ZkResult parent = wait(made);
  EXPECT_TRUE(parent.ok() || parent.is(ZkCode::kNodeExists)) << parent.message;

  std::optional<std::pair<ZkResult, std::string>> created;
  ZkStat createdStat;
  session->create("/leasehold-zk-check/n-", "leader-1", ZkCreateMode::kEphemeralSequential,
                  [&](ZkResult r, std::string path, ZkStat stat) {
                    createdStat = stat;
                    created.emplace(r, path);
                  });
  const auto [createResult, path] = wait(created);
  ASSERT_TRUE(createResult.ok()) << createResult.message;
  std::printf("created %s czxid 0x%llx owner 0x%llx\n", path.c_str(),
              static_cast<unsigned long long>(createdStat.czxid),
              static_cast<unsigned long long>(createdStat.ephemeralOwner));
  EXPECT_EQ(createdStat.ephemeralOwner, id);
  EXPECT_TRUE(path.starts_with("/leasehold-zk-check/n-")) << path;

  std::vector<ZkWatchEvent> childEvents;
  std::optional<std::vector<std::string>> children;
  session->getChildren(
      "/leasehold-zk-check", [&](const ZkWatchEvent& e) { childEvents.push_back(e); },
      [&](ZkResult r, std::vector<std::string> names) {
        EXPECT_TRUE(r.ok()) << r.message;
        children = names;
      });
  const auto names = wait(children);
  EXPECT_NE(std::find(names.begin(), names.end(), path.substr(path.rfind('/') + 1)), names.end());

  std::vector<ZkWatchEvent> existsEvents;
  std::optional<std::optional<ZkStat>> other;
  session->exists(
      "/leasehold-zk-check/other", [&](const ZkWatchEvent& e) { existsEvents.push_back(e); },
      [&](ZkResult r, std::optional<ZkStat> stat) {
        EXPECT_TRUE(r.ok()) << r.message;
        other = stat;
      });
  EXPECT_FALSE(wait(other));
  made.reset();
  session->create("/leasehold-zk-check/other", "", ZkCreateMode::kEphemeral,
                  [&](ZkResult r, std::string, ZkStat) { made = r; });
  EXPECT_TRUE(wait(made).ok());
  ASSERT_TRUE(runUntil(
      io_, [&] { return !childEvents.empty() && !existsEvents.empty(); }, 20s));
  EXPECT_EQ(childEvents[0].kind, ZkWatchEvent::Kind::kChildrenChanged);
  EXPECT_EQ(existsEvents[0].kind, ZkWatchEvent::Kind::kCreated);
  std::printf("watches fired: %s, %s\n", childEvents[0].path.c_str(), existsEvents[0].path.c_str());

  std::optional<ZkResult> pinged;
  session->ping([&](ZkResult r) { pinged = r; });
  EXPECT_TRUE(wait(pinged).ok());

  // Idle for 8 s: one automatic ping (a third of the 20 s timeout) keeps the connection.
  net::test::runFor(io_, 8s);
  EXPECT_EQ(events.size(), 1u);

  if (const char* restart = std::getenv("LEASEHOLD_ZK_TEST_RESTART")) {
    std::printf("restarting the server: %s\n", restart);
    ASSERT_EQ(std::system(restart), 0);
    ASSERT_TRUE(runUntil(
        io_, [&] { return events.size() >= 3; }, 60s));
    EXPECT_EQ(events[1].kind, ZkSessionEvent::Kind::kDisconnected);
    EXPECT_EQ(events.back().kind, ZkSessionEvent::Kind::kConnected);
    EXPECT_EQ(events.back().sessionId, id);
    EXPECT_FALSE(events.back().newSession);
    std::optional<std::pair<ZkResult, ZkStat>> data;
    session->getData(path, [&](ZkResult r, std::string value, ZkStat stat) {
      EXPECT_EQ(value, "leader-1");
      data.emplace(r, stat);
    });
    const auto [r, stat] = wait(data);
    EXPECT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(stat.ephemeralOwner, id);
  }

  bool closed = false;
  session->close([&] { closed = true; });
  ASSERT_TRUE(runUntil(
      io_, [&] { return closed; }, 20s));

  // The ephemeral node went with the session, at once.
  std::vector<ZkSessionEvent> otherEvents;
  auto observer = open("/leasehold-zk-check", std::nullopt, otherEvents);
  std::optional<std::optional<ZkStat>> gone;
  observer->exists(path.substr(std::string("/leasehold-zk-check").size()), nullptr,
                   [&](ZkResult r, std::optional<ZkStat> stat) {
                     EXPECT_TRUE(r.ok()) << r.message;
                     gone = stat;
                   });
  EXPECT_FALSE(wait(gone));
  bool observerClosed = false;
  observer->close([&] { observerClosed = true; });
  ASSERT_TRUE(runUntil(
      io_, [&] { return observerClosed; }, 20s));
}

TEST_F(ZkRealServerTest, CreatorOnlyNodesRefuseOtherSessions) {
  std::vector<ZkSessionEvent> ownerEvents;
  auto owner = open("", ZkSession::Credentials{"alice", "s3cret"}, ownerEvents);
  std::optional<ZkResult> made;
  owner->create("/leasehold-zk-private", "x", ZkCreateMode::kEphemeral,
                [&](ZkResult r, std::string, ZkStat) { made = r; });
  ASSERT_TRUE(wait(made).ok()) << made->message;
  std::vector<ZkSessionEvent> strangerEvents;
  auto stranger = open("", std::nullopt, strangerEvents);
  std::optional<ZkResult> read;
  stranger->getData("/leasehold-zk-private", [&](ZkResult r, std::string, ZkStat) { read = r; });
  const ZkResult refused = wait(read);
  std::printf("stranger's getData: %s: %s\n", toString(refused.kind), refused.message.c_str());
  EXPECT_EQ(refused.kind, ZkResult::Kind::kDenied);
  EXPECT_TRUE(refused.is(ZkCode::kNoAuth));
  bool closed = false;
  owner->close([&] { stranger->close([&] { closed = true; }); });
  ASSERT_TRUE(runUntil(
      io_, [&] { return closed; }, 20s));
}

TEST_F(ZkRealServerTest, AContainerNodeIsCreatedWithCreate2) {
  std::vector<ZkSessionEvent> events;
  auto session = open("", std::nullopt, events);
  std::optional<ZkResult> made;
  session->create("/leasehold-zk-container", "", ZkCreateMode::kContainer,
                  [&](ZkResult r, std::string, ZkStat) { made = r; });
  const ZkResult container = wait(made);
  EXPECT_TRUE(container.ok() || container.is(ZkCode::kNodeExists)) << container.message;
  made.reset();
  session->create("/leasehold-zk-container/member", "", ZkCreateMode::kEphemeral,
                  [&](ZkResult r, std::string, ZkStat) { made = r; });
  EXPECT_TRUE(wait(made).ok()) << made->message;
  bool closed = false;
  session->close([&] { closed = true; });
  ASSERT_TRUE(runUntil(
      io_, [&] { return closed; }, 20s));
}

TEST_F(ZkRealServerTest, TlsToTheSecureClientPortIsVerified) {
  const char* servers = std::getenv("LEASEHOLD_ZK_TEST_TLS_SERVERS");
  const char* caFile = std::getenv("LEASEHOLD_ZK_TEST_CA");
  if (!servers || !caFile) GTEST_SKIP() << "LEASEHOLD_ZK_TEST_TLS_SERVERS or _CA is not set";
  std::stringstream ca;
  ca << std::ifstream(caFile).rdbuf();
  net::TlsOptions tls;
  tls.caPem = ca.str();

  std::vector<ZkSessionEvent> events;
  auto session = open("", std::nullopt, events, tls, servers);
  std::optional<std::pair<ZkResult, std::vector<std::string>>> children;
  session->getChildren("/", nullptr, [&](ZkResult r, std::vector<std::string> names) {
    children.emplace(r, names);
  });
  const auto [r, names] = wait(children);
  EXPECT_TRUE(r.ok()) << r.message;
  ASSERT_FALSE(events.empty());
  std::printf("over TLS: session 0x%llx on %s, %zu children of /\n",
              static_cast<unsigned long long>(events[0].sessionId), events[0].server.c_str(),
              names.size());
  bool closed = false;
  session->close([&] { closed = true; });
  ASSERT_TRUE(runUntil(
      io_, [&] { return closed; }, 20s));

  tls.serverName = "not-this-server.invalid";
  std::vector<ZkSessionEvent> refusedEvents;
  auto refused = open("", std::nullopt, refusedEvents, tls, servers);
  std::optional<ZkResult> pinged;
  refused->ping([&](ZkResult result) { pinged = result; });
  const ZkResult failure = wait(pinged);
  std::printf("with the wrong name: %s: %s\n", toString(failure.kind), failure.message.c_str());
  EXPECT_EQ(failure.kind, ZkResult::Kind::kUnavailable);
  EXPECT_NE(failure.message.find("TLS handshake"), std::string::npos) << failure.message;
  // Never a session: only the rounds of servers that failed, each saying why.
  for (const auto& e : refusedEvents) {
    EXPECT_EQ(e.kind, ZkSessionEvent::Kind::kDisconnected);
    EXPECT_NE(e.detail.find("hostname mismatch"), std::string::npos) << e.detail;
  }
}

}  // namespace
}  // namespace leasehold::zookeeper

// The status API over a real loopback socket: GET / answers what contrib's leader-elector and
// nais/elector answered ({"name": ...}) inside the /leader document, /sse streams like
// /leader/watch, and "name" says who leads in each state an app can meet.
#include "publish/StatusServer.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "FakeClock.h"
#include "Fetch.h"
#include "kube/LeaseLockName.h"

namespace leasehold::publish {
namespace {

using election::Leadership;
using namespace std::chrono_literals;
using net::test::fetch;
using net::test::get;
using net::test::runUntil;

class StatusServerTest : public ::testing::Test {
 protected:
  StatusServerTest() {
    net::HttpServer::Options options;
    options.address = "127.0.0.1";
    options.port = 0;
    server =
        std::make_unique<StatusServer>(io, options, clock, kube::leaseLockName("default", "my-app"),
                                       StatusSource{[this] { return state; }, [] {}, 15s});
    EXPECT_FALSE(server->listen());
    client = std::make_unique<net::HttpsClient>(
        io, "http://127.0.0.1:" + std::to_string(server->port()));
  }
  ~StatusServerTest() override {
    client->shutdown();
    server->stop();
    io.run_for(100ms);
  }

  net::HttpsClient::Response answer(const std::string& path) {
    auto result = fetch(io, *client, get(path));
    EXPECT_TRUE(result && result->ok()) << (result ? result->error().message : "no answer");
    return result && result->ok() ? result->response() : net::HttpsClient::Response{};
  }
  nlohmann::json root() {
    const auto r = answer("/");
    EXPECT_EQ(r.status, 200);
    return nlohmann::json::parse(r.body);
  }

  // web-1's sidecar, in the states its app can meet.
  void following(std::string holder, std::string pod) {
    state = Leadership{};
    state.identity = "web-1_00000001";
    state.holder = std::move(holder);
    state.holderPod = std::move(pod);
    state.fencingToken = 7;
  }
  void leading() {
    following("web-1_00000001", "web-1");
    state.leader = true;
    state.validUntil = clock.wallNow() + 10s;
  }

  boost::asio::io_context io;
  time::FakeClock clock;
  Leadership state;
  std::unique_ptr<StatusServer> server;
  std::unique_ptr<net::HttpsClient> client;
};

TEST_F(StatusServerTest, RootIsTheLeaderDocumentWithTheContribNameField) {
  leading();
  const auto r = answer("/");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.get("content-type"), "application/json");
  EXPECT_EQ(r.headers.get("cache-control"), "no-store");
  EXPECT_EQ(r.body, answer("/leader").body);
  const auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["name"], "web-1");
  EXPECT_TRUE(j["leader"].get<bool>());
  EXPECT_EQ(j["fencingToken"], 7);
}

TEST_F(StatusServerTest, NameInEveryStateAnAppCanMeet) {
  state.identity = "web-1_00000001";  // the Lease not read yet
  EXPECT_EQ(root()["name"], "");

  following("web-0_00000000", "web-0");  // another replica leads
  EXPECT_EQ(root()["name"], "web-0");
  EXPECT_FALSE(root()["leader"].get<bool>());

  following("", "");  // a new Lease, or released by SIGTERM: nobody leads
  EXPECT_EQ(root()["name"], "");

  following("client-go-holder", "");  // a holder without our annotation: its identity
  EXPECT_EQ(root()["name"], "client-go-holder");

  leading();
  EXPECT_EQ(root()["name"], "web-1");

  // The renew deadline passed (API server unreachable): the Lease still names this replica, but
  // an app that compares name with its own pod must stop now, not when someone else takes over.
  following("web-1_00000001", "web-1");
  const auto lapsed = root();
  EXPECT_EQ(lapsed["name"], "");
  EXPECT_EQ(lapsed["holder"], "web-1_00000001");
  EXPECT_FALSE(lapsed["leader"].get<bool>());
}

TEST_F(StatusServerTest, IsLeaderIsTheClaimAtThisInstant) {
  leading();
  EXPECT_EQ(answer("/isLeader").body, R"({"isLeader":true})");
  following("web-1_00000001", "web-1");  // lapsed, though the Lease still names us
  EXPECT_EQ(answer("/isLeader").body, R"({"isLeader":false})");
  EXPECT_EQ(answer("/isLeader").headers.get("content-type"), "application/json");
}

TEST_F(StatusServerTest, RootTakesOnlyGetAndHead) {
  leading();
  net::HttpsClient::Request post = get("/");
  post.method = "POST";
  auto result = fetch(io, *client, post);
  ASSERT_TRUE(result && result->ok());
  EXPECT_EQ(result->response().status, 405);
  net::HttpsClient::Request head = get("/");
  head.method = "HEAD";
  result = fetch(io, *client, head);
  ASSERT_TRUE(result && result->ok());
  EXPECT_EQ(result->response().status, 200);
  EXPECT_EQ(answer("/other").status, 404) << "only / itself, not every path";
}

TEST_F(StatusServerTest, SseStreamsTheSameEventsAsLeaderWatch) {
  following("web-0_00000000", "web-0");
  std::string received;
  int status = 0;
  auto stream = client->stream(get("/sse"), {[&](int s, const net::HttpHeaders&) { status = s; },
                                             [&](std::string_view bytes) { received += bytes; },
                                             [](std::optional<net::HttpsClient::Error>) {}});
  ASSERT_TRUE(runUntil(io, [&] { return received.find("\n\n") != std::string::npos; }));
  EXPECT_EQ(status, 200);
  const auto first = received.substr(0, received.find("\n\n"));
  ASSERT_TRUE(first.starts_with("data: ")) << first;
  EXPECT_EQ(nlohmann::json::parse(first.substr(6))["name"], "web-0");

  leading();
  server->leadershipMayHaveChanged();
  ASSERT_TRUE(
      runUntil(io, [&] { return received.find("\n\n", first.size() + 2) != std::string::npos; }));
  const auto second = received.substr(first.size() + 2);
  EXPECT_EQ(nlohmann::json::parse(second.substr(6, second.find("\n\n") - 6))["name"], "web-1");
  stream->cancel();
}

}  // namespace
}  // namespace leasehold::publish

// EtcdGateway against scripted members on loopback (real sockets, one io_context): the request
// on the wire, the answers' kinds, failover between members (which calls go again and which
// not), authentication and its renewal, and the watch stream.
#include "etcd/EtcdGateway.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>

#include "EventLoop.h"
#include "ScriptedServer.h"
#include "runtime/AsioClock.h"

namespace leasehold::etcd {
namespace {

using namespace std::chrono_literals;
using net::test::runUntil;
using net::test::ScriptedConnection;
using net::test::ScriptedServer;

// One request as the member saw it.
struct Seen {
  std::string target;
  std::string authorization;
  std::string body;
};

Seen parse(const std::string& raw) {
  Seen s;
  const auto lineEnd = raw.find("\r\n");
  const auto first = raw.substr(0, lineEnd);
  const auto sp1 = first.find(' ');
  s.target = first.substr(sp1 + 1, first.find(' ', sp1 + 1) - sp1 - 1);
  const auto headEnd = raw.find("\r\n\r\n");
  const auto auth = raw.find("\r\nAuthorization: ");
  if (auth != std::string::npos && auth < headEnd) {
    const auto from = auth + 17;
    s.authorization = raw.substr(from, raw.find("\r\n", from) - from);
  }
  s.body = raw.substr(headEnd + 4);
  return s;
}

std::string chunk(const std::string& bytes) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx", bytes.size());
  return std::string(size) + "\r\n" + bytes + "\r\n";
}

const std::string kStreamHead =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

std::string errorAnswer(int httpStatus, int code, const std::string& message) {
  return ScriptedServer::response(
      httpStatus, R"({"code":)" + std::to_string(code) + R"(,"message":")" + message + R"("})");
}

// A member whose answers come from a function of the request (nullopt: never answers).
struct Member {
  Member(boost::asio::io_context& io)
      : server(io, std::nullopt, [this](auto c, const auto& raw) {
          seen.push_back(parse(raw));
          if (auto answer = answer_(seen.back())) c->write(*answer);
        }) {}
  void answer(std::function<std::optional<std::string>(const Seen&)> f) { answer_ = std::move(f); }
  std::vector<Seen> seen;
  std::function<std::optional<std::string>(const Seen&)> answer_ = [](const Seen&) {
    ADD_FAILURE() << "a request the test did not expect";
    return std::optional<std::string>();
  };
  ScriptedServer server;
};

// A port on which nothing listens (bound, never listening: connect is refused at once, and no
// other test can take the port meanwhile).
struct RefusingPort {
  explicit RefusingPort(boost::asio::io_context& io) : socket(io) {
    socket.open(boost::asio::ip::tcp::v4());
    socket.bind({boost::asio::ip::make_address("127.0.0.1"), 0});
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(socket.local_endpoint().port());
  }
  boost::asio::ip::tcp::socket socket;
};

class EtcdGatewayTest : public ::testing::Test {
 protected:
  std::unique_ptr<EtcdGateway> gateway(std::vector<std::string> endpoints,
                                       std::optional<EtcdGateway::Credentials> credentials = {}) {
    EtcdGateway::Options options;
    options.endpoints = std::move(endpoints);
    options.credentials = std::move(credentials);
    return std::make_unique<EtcdGateway>(io, clock, std::move(options));
  }
  EtcdReply call(EtcdGateway& g, EtcdCall c) {
    std::optional<EtcdReply> out;
    g.call(std::move(c), [&](EtcdReply r) { out = std::move(r); });
    EXPECT_FALSE(out) << "completed inside call()";
    EXPECT_TRUE(runUntil(io, [&] { return out.has_value(); }));
    return out.value_or(EtcdReply{});
  }
  static EtcdCall range(bool idempotent = true) {
    return EtcdCall{"kv/range", R"({"key":"ZQ=="})", idempotent, 2000ms};
  }

  boost::asio::io_context io;
  runtime::AsioClock clock{io, 1.0};
};

TEST_F(EtcdGatewayTest, PostsTheBodyToTheMethodAndReturnsTheAnswer) {
  Member a(io);
  a.answer([](const Seen&) { return ScriptedServer::response(200, R"({"count":"1"})"); });
  auto g = gateway({a.server.url()});
  const EtcdReply r = call(*g, range());
  EXPECT_EQ(r.kind, EtcdReply::Kind::kOk) << r.message;
  EXPECT_EQ(r.body, R"({"count":"1"})");
  ASSERT_EQ(a.seen.size(), 1u);
  EXPECT_EQ(a.seen[0].target, "/v3/kv/range");
  EXPECT_EQ(a.seen[0].body, R"({"key":"ZQ=="})");
  EXPECT_EQ(a.seen[0].authorization, "");
}

TEST_F(EtcdGatewayTest, ErrorAnswersHaveTheirKind) {
  struct Case {
    std::string answer;
    EtcdReply::Kind kind;
    int code;
  };
  const std::vector<Case> cases = {
      {errorAnswer(403, 7, "etcdserver: permission denied"), EtcdReply::Kind::kDenied, 7},
      {errorAnswer(400, 3, "etcdserver: user name is empty"), EtcdReply::Kind::kDenied, 3},
      {errorAnswer(404, 5, "etcdserver: requested lease not found"), EtcdReply::Kind::kRejected, 5},
      {errorAnswer(400, 3, "proto: invalid value for bytes field key"), EtcdReply::Kind::kRejected,
       3},
      // A streaming method's error arrives with status 200, as {"error": {...}}.
      {ScriptedServer::response(200, R"({"error":{"grpc_code":5,"message":"lease not found"}})"),
       EtcdReply::Kind::kRejected, 5},
      // Not the gateway's form: a proxy in front of the member.
      {ScriptedServer::response(502, "<html>bad gateway</html>"), EtcdReply::Kind::kUnavailable, 0},
      {ScriptedServer::response(404, "404 page not found"), EtcdReply::Kind::kRejected, 0},
  };
  for (const auto& c : cases) {
    Member a(io);
    a.answer([&](const Seen&) { return c.answer; });
    auto g = gateway({a.server.url()});
    const EtcdReply r = call(*g, range(false));
    EXPECT_EQ(r.kind, c.kind) << c.answer;
    EXPECT_EQ(r.code, c.code) << c.answer;
    EXPECT_NE(r.message.find(a.server.url()), std::string::npos) << r.message;
  }
}

TEST_F(EtcdGatewayTest, AnIdempotentCallGoesToTheNextMemberWhenOneCannotServe) {
  Member a(io), b(io);
  a.answer([](const Seen&) { return errorAnswer(503, 14, "etcdserver: no leader"); });
  b.answer([](const Seen&) { return ScriptedServer::response(200, "{}"); });
  auto g = gateway({a.server.url(), b.server.url()});
  const EtcdReply r = call(*g, range(true));
  EXPECT_EQ(r.kind, EtcdReply::Kind::kOk) << r.message;
  EXPECT_EQ(r.endpoint, b.server.url());
  EXPECT_EQ(a.seen.size(), 1u);
  EXPECT_EQ(b.seen.size(), 1u);
  // The next call starts with the member that served.
  EXPECT_EQ(g->currentEndpoint(), b.server.url());
  EXPECT_TRUE(call(*g, range(true)).ok());
  EXPECT_EQ(a.seen.size(), 1u);
  EXPECT_EQ(b.seen.size(), 2u);
}

TEST_F(EtcdGatewayTest, ACallThatMayHaveBeenAppliedIsNotSentAgain) {
  Member a(io), b(io);
  // "request timed out": the proposal may still be applied.
  a.answer([](const Seen&) { return errorAnswer(503, 14, "etcdserver: request timed out"); });
  auto g = gateway({a.server.url(), b.server.url()});
  const EtcdReply r = call(*g, EtcdCall{"lease/grant", R"({"TTL":"5"})", false, 2000ms});
  EXPECT_EQ(r.kind, EtcdReply::Kind::kUnavailable);
  EXPECT_EQ(r.code, kCodeUnavailable);
  EXPECT_NE(r.message.find("request timed out"), std::string::npos) << r.message;
  EXPECT_TRUE(b.seen.empty());
  EXPECT_EQ(g->currentEndpoint(), b.server.url());
}

TEST_F(EtcdGatewayTest, ACallThatNeverLeftGoesToTheNextMemberEvenIfNotIdempotent) {
  RefusingPort dead(io);
  Member b(io);
  b.answer([](const Seen&) { return ScriptedServer::response(200, R"({"ID":"7","TTL":"5"})"); });
  auto g = gateway({dead.url(), b.server.url()});
  const EtcdReply r = call(*g, EtcdCall{"lease/grant", R"({"TTL":"5"})", false, 2000ms});
  EXPECT_EQ(r.kind, EtcdReply::Kind::kOk) << r.message;
  EXPECT_EQ(b.seen.size(), 1u);
}

TEST_F(EtcdGatewayTest, EveryMemberSilentEndsTheCallAtItsDeadline) {
  Member a(io), b(io);
  a.answer([](const Seen&) { return std::nullopt; });
  b.answer([](const Seen&) { return std::nullopt; });
  auto g = gateway({a.server.url(), b.server.url()});
  const auto deadline = 300ms;
  const auto started = clock.now();
  const EtcdReply r = call(*g, EtcdCall{"kv/range", "{}", true, deadline});
  const auto took = clock.now() - started;
  EXPECT_EQ(r.kind, EtcdReply::Kind::kUnavailable);
  EXPECT_EQ(r.code, 0);
  // The deadline is the call's, not each member's: a silent member uses it up.
  EXPECT_GE(took, deadline);
  EXPECT_EQ(a.seen.size(), 1u);
  EXPECT_TRUE(b.seen.empty());
  EXPECT_EQ(g->currentEndpoint(), b.server.url());
}

TEST_F(EtcdGatewayTest, AuthenticatesOnceAndSendsTheTokenWithoutAScheme) {
  Member a(io);
  a.answer([](const Seen& s) -> std::optional<std::string> {
    if (s.target == "/v3/auth/authenticate") {
      return ScriptedServer::response(200, R"({"header":{},"token":"tok.1"})");
    }
    return ScriptedServer::response(200, "{}");
  });
  auto g = gateway({a.server.url()}, EtcdGateway::Credentials{"lh", "s3cret"});
  int done = 0;
  for (int i = 0; i < 3; ++i)
    g->call(range(), [&](EtcdReply r) { done += r.ok(); });
  ASSERT_TRUE(runUntil(io, [&] { return done == 3; }));
  ASSERT_EQ(a.seen.size(), 4u);
  EXPECT_EQ(a.seen[0].target, "/v3/auth/authenticate");
  EXPECT_EQ(a.seen[0].body, R"({"name":"lh","password":"s3cret"})");
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(a.seen[i].target, "/v3/kv/range");
    EXPECT_EQ(a.seen[i].authorization, "tok.1");
  }
}

TEST_F(EtcdGatewayTest, AnExpiredTokenIsRenewedOnce) {
  Member a(io);
  int tokens = 0;
  a.answer([&](const Seen& s) -> std::optional<std::string> {
    if (s.target == "/v3/auth/authenticate") {
      ++tokens;
      return ScriptedServer::response(200, R"({"token":"tok.)" + std::to_string(tokens) + R"("})");
    }
    if (s.authorization != "tok.2") return errorAnswer(401, 16, "etcdserver: invalid auth token");
    return ScriptedServer::response(200, "{}");
  });
  auto g = gateway({a.server.url()}, EtcdGateway::Credentials{"lh", "pw"});
  EXPECT_TRUE(call(*g, range()).ok());
  EXPECT_EQ(tokens, 2);
  // A token refused right after a new authentication is not renewed in a loop.
  a.answer([&](const Seen& s) -> std::optional<std::string> {
    if (s.target == "/v3/auth/authenticate")
      return ScriptedServer::response(200, R"({"token":"t"})");
    return errorAnswer(401, 16, "etcdserver: invalid auth token");
  });
  const auto before = a.seen.size();
  const EtcdReply r = call(*g, range());
  EXPECT_EQ(r.kind, EtcdReply::Kind::kDenied);
  EXPECT_EQ(a.seen.size() - before, 3u);  // the call, authenticate, the call again
}

TEST_F(EtcdGatewayTest, AFailedAuthenticationNamesTheUserNotThePassword) {
  Member a(io);
  a.answer([](const Seen&) {
    return errorAnswer(400, 3, "etcdserver: authentication failed, invalid user ID or password");
  });
  auto g = gateway({a.server.url()}, EtcdGateway::Credentials{"lh", "hunter2"});
  const EtcdReply r = call(*g, range());
  EXPECT_EQ(r.kind, EtcdReply::Kind::kDenied);
  EXPECT_NE(r.message.find("etcd user 'lh'"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("invalid user ID or password"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find("hunter2"), std::string::npos) << r.message;
  ASSERT_EQ(a.seen.size(), 1u);  // the call itself never went without a token
}

TEST_F(EtcdGatewayTest, AnUnusableEndpointIsAConfigurationErrorAndEveryCallFails) {
  auto g = gateway({"ftp://127.0.0.1:2379"});
  ASSERT_TRUE(g->configurationError());
  EXPECT_NE(g->configurationError()->find("--etcd-endpoints: ftp://127.0.0.1:2379"),
            std::string::npos)
      << *g->configurationError();
  const EtcdReply r = call(*g, range());
  EXPECT_EQ(r.kind, EtcdReply::Kind::kRejected);
  EXPECT_EQ(r.message, *g->configurationError());
  EXPECT_TRUE(gateway({})->configurationError());
}

// Records a watch.
struct WatchRecorder {
  std::vector<WatchMessage> messages;
  std::optional<std::string> ended;
  EtcdWatchCallbacks callbacks() {
    return {[this](const WatchMessage& m) { messages.push_back(m); },
            [this](const std::string& why) {
              EXPECT_FALSE(ended) << "onEnd twice";
              ended = why;
            }};
  }
};

TEST_F(EtcdGatewayTest, AWatchDeliversOneMessagePerLineAcrossChunks) {
  Member a(io);
  std::shared_ptr<ScriptedConnection> stream;
  a.server.setOnRequest([&](auto c, const std::string& raw) {
    a.seen.push_back(parse(raw));
    stream = c;
  });
  auto g = gateway({a.server.url()});
  WatchRecorder rec;
  auto w = g->watch(encodeWatchCreate("e/x", false, 5), rec.callbacks(), 1000ms, 0ms);
  ASSERT_TRUE(runUntil(io, [&] { return stream != nullptr; }));
  EXPECT_EQ(a.seen[0].target, "/v3/watch");
  EXPECT_EQ(a.seen[0].body, encodeWatchCreate("e/x", false, 5));
  stream->write(kStreamHead +
                chunk(R"({"result":{"header":{"revision":"5"},"created":true}})"
                      "\n"
                      R"({"result":{"header":{"revision":"6"},"events":[{"type":"DE)"));
  ASSERT_TRUE(runUntil(io, [&] { return rec.messages.size() == 1; }));
  EXPECT_TRUE(rec.messages[0].created);
  stream->write(chunk(R"(LETE","kv":{"key":"ZS94","mod_revision":"6"}}]}})"
                      "\n"));
  ASSERT_TRUE(runUntil(io, [&] { return rec.messages.size() == 2; }));
  ASSERT_EQ(rec.messages[1].events.size(), 1u);
  EXPECT_EQ(rec.messages[1].events[0].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(rec.messages[1].events[0].kv.key, "e/x");
  EXPECT_TRUE(w->active());
  // A malformed message ends the watch, naming what was wrong.
  stream->write(chunk("{\"result\":{\"created\":\"maybe\"}}\n"));
  ASSERT_TRUE(runUntil(io, [&] { return rec.ended.has_value(); }));
  EXPECT_NE(rec.ended->find("malformed watch message"), std::string::npos) << *rec.ended;
  EXPECT_FALSE(w->active());
}

TEST_F(EtcdGatewayTest, ACancelledWatchReportsNothingMore) {
  Member a(io);
  std::shared_ptr<ScriptedConnection> stream;
  a.server.setOnRequest([&](auto c, const std::string&) { stream = c; });
  auto g = gateway({a.server.url()});
  WatchRecorder rec;
  auto w = g->watch(encodeWatchCreate("e/x", false, 0), rec.callbacks(), 1000ms, 0ms);
  ASSERT_TRUE(runUntil(io, [&] { return stream != nullptr; }));
  w->cancel();
  stream->write(kStreamHead + chunk(R"({"result":{"created":true}})"
                                    "\n"));
  stream->closeAfterWrites();
  net::test::runFor(io, 100ms);
  EXPECT_TRUE(rec.messages.empty());
  EXPECT_FALSE(rec.ended);
}

TEST_F(EtcdGatewayTest, AWatchOnADeadMemberEndsAndTheNextGoesElsewhere) {
  RefusingPort dead(io);
  Member b(io);
  std::shared_ptr<ScriptedConnection> stream;
  b.server.setOnRequest([&](auto c, const std::string&) {
    stream = c;
    c->write(kStreamHead + chunk(R"({"result":{"created":true}})"
                                 "\n"));
  });
  auto g = gateway({dead.url(), b.server.url()});
  WatchRecorder first;
  auto w1 = g->watch(encodeWatchCreate("e/x", false, 0), first.callbacks(), 1000ms, 0ms);
  ASSERT_TRUE(runUntil(io, [&] { return first.ended.has_value(); }));
  EXPECT_NE(first.ended->find(dead.url()), std::string::npos) << *first.ended;
  WatchRecorder second;
  auto w2 = g->watch(encodeWatchCreate("e/x", false, 0), second.callbacks(), 1000ms, 0ms);
  ASSERT_TRUE(runUntil(io, [&] { return second.messages.size() == 1; }));
  EXPECT_TRUE(second.messages[0].created);
  // The member going away ends the watch.
  stream->close();
  ASSERT_TRUE(runUntil(io, [&] { return second.ended.has_value(); }));
}

TEST_F(EtcdGatewayTest, AWatchRefusedWithAnErrorAnswerSaysWhy) {
  Member a(io);
  a.answer([](const Seen&) { return errorAnswer(503, 14, "etcdserver: no leader"); });
  auto g = gateway({a.server.url()});
  WatchRecorder rec;
  auto w = g->watch(encodeWatchCreate("e/x", false, 0), rec.callbacks(), 1000ms, 0ms);
  ASSERT_TRUE(runUntil(io, [&] { return rec.ended.has_value(); }));
  EXPECT_NE(rec.ended->find("no leader"), std::string::npos) << *rec.ended;
}

}  // namespace
}  // namespace leasehold::etcd

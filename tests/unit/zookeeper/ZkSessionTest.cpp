// ZkSession against scripted jute servers on loopback (real sockets, one io_context) and the
// FakeClock: what goes on the wire, FIFO answers, watches, deadlines and failover with the same
// session, expiry, authentication, the chroot, idle pings and TLS. A server fails the test on a
// request the test did not script.
#include "zookeeper/ZkSession.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <deque>

#include "EventLoop.h"
#include "FakeClock.h"
#include "TestCertificates.h"
#include "ThreadCount.h"
#include "net/HostResolver.h"
#include "zookeeper/ZkCodec.h"

namespace leasehold::zookeeper {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;
using net::test::runUntil;

// A request as the server saw it.
struct Seen {
  RequestHeader header;
  std::string body;
};

// One connection to a scripted server: records the ConnectRequest and every request, writes
// what the test says.
class JuteConnection : public std::enable_shared_from_this<JuteConnection> {
 public:
  JuteConnection(asio::io_context& io, ssl::context* tls) {
    if (tls) {
      tls_.emplace(io, *tls);
    } else {
      plain_.emplace(io);
    }
  }
  tcp::socket& socket() { return tls_ ? tls_->next_layer() : *plain_; }

  void start(std::function<void(std::shared_ptr<JuteConnection>)> onConnect,
             std::function<void(std::shared_ptr<JuteConnection>, const Seen&)> onRequest) {
    onConnect_ = std::move(onConnect);
    onRequest_ = std::move(onRequest);
    if (!tls_) return read();
    tls_->async_handshake(ssl::stream_base::server,
                          [self = shared_from_this()](const error_code& ec) {
                            if (ec) {
                              self->handshakeError = ec.message();
                              return self->close();
                            }
                            self->read();
                          });
  }

  void write(std::string bytes) {
    if (closed_) return;
    out_.push_back(std::move(bytes));
    flush();
  }
  void answer(std::int32_t xid, std::int64_t zxid, std::int32_t err, std::string body = {}) {
    write(replyFrame(ReplyHeader{xid, zxid, err}, body));
  }
  void close() {
    if (closed_) return;
    closed_ = true;
    error_code ignored;
    socket().close(ignored);
  }
  bool closed() const { return closed_; }

  std::optional<ConnectRequest> connect;
  std::vector<Seen> requests;
  std::string handshakeError;

 private:
  void read() {
    auto onRead = [self = shared_from_this()](const error_code& ec, std::size_t n) {
      if (ec) return self->close();
      self->in_.append(self->chunk_, n);
      self->parse();
      if (!self->closed_) self->read();
    };
    if (tls_) {
      tls_->async_read_some(asio::buffer(chunk_), std::move(onRead));
    } else {
      plain_->async_read_some(asio::buffer(chunk_), std::move(onRead));
    }
  }
  void parse() {
    while (!closed_) {
      const FrameScan scan = scanFrame(in_);
      if (scan.kind != FrameScan::Kind::kFrame) return;
      const std::string payload = in_.substr(4, scan.payloadBytes);
      in_.erase(0, 4 + scan.payloadBytes);
      if (!connect) {
        auto decoded = decodeConnectRequest(payload);
        EXPECT_TRUE(decoded.ok()) << decoded.error();
        if (!decoded.ok()) return close();
        connect = decoded.value();
        onConnect_(shared_from_this());
        continue;
      }
      auto decoded = decodeRequest(payload);
      EXPECT_TRUE(decoded.ok()) << decoded.error();
      if (!decoded.ok()) return close();
      requests.push_back(Seen{decoded.value().header, std::string(decoded.value().body)});
      onRequest_(shared_from_this(), requests.back());
    }
  }
  void flush() {
    if (writing_ || out_.empty() || closed_) return;
    writing_ = true;
    auto onWritten = [self = shared_from_this()](const error_code& ec, std::size_t) {
      self->writing_ = false;
      self->out_.pop_front();
      if (ec) return self->close();
      self->flush();
    };
    if (tls_) {
      asio::async_write(*tls_, asio::buffer(out_.front()), std::move(onWritten));
    } else {
      asio::async_write(*plain_, asio::buffer(out_.front()), std::move(onWritten));
    }
  }

  std::optional<ssl::stream<tcp::socket>> tls_;
  std::optional<tcp::socket> plain_;
  std::function<void(std::shared_ptr<JuteConnection>)> onConnect_;
  std::function<void(std::shared_ptr<JuteConnection>, const Seen&)> onRequest_;
  std::string in_;
  char chunk_[16384];
  std::deque<std::string> out_;
  bool writing_ = false;
  bool closed_ = false;
};

// A ZooKeeper server whose every answer the test scripts.
class JuteServer {
 public:
  using OnConnect = std::function<void(std::shared_ptr<JuteConnection>)>;
  using OnRequest = std::function<void(std::shared_ptr<JuteConnection>, const Seen&)>;

  explicit JuteServer(asio::io_context& io, const net::test::KeyPair* tls = nullptr)
      : io_(io), acceptor_(io) {
    if (tls) {
      tlsContext_.emplace(ssl::context::tls_server);
      tlsContext_->use_certificate_chain(asio::buffer(tls->certPem));
      tlsContext_->use_private_key(asio::buffer(tls->keyPem), ssl::context::pem);
    }
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.bind(endpoint);
    acceptor_.listen();
    accept();
  }
  ~JuteServer() {
    error_code ignored;
    acceptor_.close(ignored);
    for (auto& c : connections)
      c->close();
  }

  std::string address() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }
  std::shared_ptr<JuteConnection> last() const {
    return connections.empty() ? nullptr : connections.back();
  }
  // Answers every ConnectRequest: the session asked for, or `newId` for a new one.
  void acceptSessions(std::int64_t newId, std::int32_t timeoutMs = 6000) {
    onConnect = [newId, timeoutMs](std::shared_ptr<JuteConnection> c) {
      const std::int64_t id = c->connect->sessionId != 0 ? c->connect->sessionId : newId;
      c->write(frame(encode(ConnectResponse{0, timeoutMs, id, std::string(16, 'P'), false})));
    };
  }

  OnConnect onConnect = [](std::shared_ptr<JuteConnection>) {
    ADD_FAILURE() << "a connection the test did not expect";
  };
  OnRequest onRequest = [](std::shared_ptr<JuteConnection>, const Seen& seen) {
    ADD_FAILURE() << "a request the test did not expect: type " << seen.header.type;
  };
  std::vector<std::shared_ptr<JuteConnection>> connections;

 private:
  void accept() {
    auto c = std::make_shared<JuteConnection>(io_, tlsContext_ ? &*tlsContext_ : nullptr);
    acceptor_.async_accept(c->socket(), [this, c](const error_code& ec) {
      if (ec) return;
      connections.push_back(c);
      c->start([this](auto conn) { onConnect(conn); },
               [this](auto conn, const Seen& seen) { onRequest(conn, seen); });
      accept();
    });
  }

  asio::io_context& io_;
  std::optional<ssl::context> tlsContext_;
  tcp::acceptor acceptor_;
};

const Stat kNodeStat{0x100000005, 0x100000006, 1, 2, 3, 0, 0, 0x55, 2, 0, 0x100000005};

class ZkSessionTest : public ::testing::Test {
 protected:
  ZkSession::Options options(const std::string& connectString) {
    ZkSession::Options o;
    o.connectString = connectString;
    o.sessionTimeout = 6000ms;
    o.requestTimeout = 1000ms;
    o.connectTimeout = 1000ms;
    o.shuffle = false;
    return o;
  }
  ZkSession& start(ZkSession::Options o) {
    session = std::make_unique<ZkSession>(io, clock, std::move(o));
    EXPECT_FALSE(session->configurationError()) << *session->configurationError();
    session->setSessionHandler([this](const ZkSessionEvent& e) { events.push_back(e); });
    session->open();
    return *session;
  }
  bool waitForEvents(std::size_t n) {
    return runUntil(io, [&] { return events.size() >= n; });
  }
  bool waitForRequests(JuteServer& server, std::size_t n) {
    return runUntil(io, [&] { return server.last() && server.last()->requests.size() >= n; });
  }

  asio::io_context io;
  time::FakeClock clock;
  std::unique_ptr<ZkSession> session;
  std::vector<ZkSessionEvent> events;
};

TEST_F(ZkSessionTest, HandshakeStartsANewSession) {
  JuteServer server(io);
  server.acceptSessions(0x55);
  start(options(server.address()));
  ASSERT_TRUE(waitForEvents(1));
  ASSERT_TRUE(server.last()->connect);
  EXPECT_EQ(*server.last()->connect, (ConnectRequest{0, 0, 6000, 0, std::string(16, '\0'), false}));
  EXPECT_EQ(events[0].kind, ZkSessionEvent::Kind::kConnected);
  EXPECT_EQ(events[0].sessionId, 0x55);
  EXPECT_TRUE(events[0].newSession);
  EXPECT_EQ(events[0].negotiatedTimeout, 6000ms);
  EXPECT_EQ(events[0].server, server.address());
  EXPECT_EQ(session->sessionId(), 0x55);
}

TEST_F(ZkSessionTest, RequestsGoOutInOrderAndTheirAnswersAreDecoded) {
  JuteServer server(io);
  server.acceptSessions(0x55);
  server.onRequest = [](auto c, const Seen& seen) {
    switch (seen.header.type) {
      case 15:
        return c->answer(seen.header.xid, 0x100000005, 0,
                         encode(CreateResponse{"/e/n-0000000001", kNodeStat}));
      case 4:
        return c->answer(seen.header.xid, 0x100000005, 0, encode(GetDataResponse{"hi", kNodeStat}));
      case 12:
        return c->answer(seen.header.xid, 0x100000005, 0,
                         encode(GetChildren2Response{{"n-0000000001", "n-0000000000"}, kNodeStat}));
      case 3:
        return c->answer(seen.header.xid, 0x100000005, -101);
      case 2:
        return c->answer(seen.header.xid, 0x100000007, -103);
    }
    ADD_FAILURE() << "type " << seen.header.type;
  };
  start(options(server.address()));
  std::vector<std::string> order;
  clock.advance(5ms);  // sentAt: when handed to the connection, on the injected clock
  session->create("/e/n-", "hi", ZkCreateMode::kEphemeralSequential,
                  [&](ZkResult r, std::string path, ZkStat stat) {
                    order.push_back("create");
                    EXPECT_TRUE(r.ok()) << r.message;
                    EXPECT_EQ(path, "/e/n-0000000001");
                    EXPECT_EQ(stat.czxid, 0x100000005);
                    EXPECT_EQ(stat.ephemeralOwner, 0x55);
                    EXPECT_EQ(r.server, server.address());
                  });
  session->getData("/e/n-0000000001", [&](ZkResult r, std::string data, ZkStat stat) {
    order.push_back("getData");
    EXPECT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(data, "hi");
    EXPECT_EQ(stat.version, 3);
  });
  session->getChildren("/e", nullptr, [&](ZkResult r, std::vector<std::string> children) {
    order.push_back("getChildren");
    EXPECT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(children, (std::vector<std::string>{"n-0000000001", "n-0000000000"}));
  });
  session->exists("/missing", nullptr, [&](ZkResult r, std::optional<ZkStat> stat) {
    order.push_back("exists");
    EXPECT_TRUE(r.ok()) << r.message;
    EXPECT_FALSE(stat);
  });
  session->remove("/e/n-0000000001", 2, [&](ZkResult r) {
    order.push_back("remove");
    EXPECT_EQ(r.kind, ZkResult::Kind::kRejected);
    EXPECT_TRUE(r.is(ZkCode::kBadVersion));
    EXPECT_NE(r.message.find("BadVersion"), std::string::npos) << r.message;
    EXPECT_EQ(r.sentAt, clock.now());
  });
  EXPECT_TRUE(order.empty());  // never inside the call
  ASSERT_TRUE(runUntil(io, [&] { return order.size() == 5; }));
  EXPECT_EQ(order,
            (std::vector<std::string>{"create", "getData", "getChildren", "exists", "remove"}));
  const auto& seen = server.last()->requests;
  ASSERT_EQ(seen.size(), 5u);
  for (std::size_t i = 0; i < seen.size(); ++i)
    EXPECT_EQ(seen[i].header.xid, static_cast<std::int32_t>(i + 1));
  EXPECT_EQ(decodeCreateRequest(seen[0].body).value(),
            (CreateRequest{"/e/n-", "hi", {Acl{31, "world", "anyone"}}, 3}));
  EXPECT_EQ(decodePathWatchRequest(seen[2].body).value(), (PathWatchRequest{"/e", false}));
  EXPECT_EQ(decodeDeleteRequest(seen[4].body).value(), (DeleteRequest{"/e/n-0000000001", 2}));
  EXPECT_EQ(session->lastZxidSeen(), 0x100000007);
}

TEST_F(ZkSessionTest, AnAnswerOutOfOrderDropsTheConnection) {
  JuteServer first(io);
  JuteServer second(io);
  first.acceptSessions(0x55);
  second.acceptSessions(0x99);
  first.onRequest = [](auto c, const Seen& seen) {
    if (seen.header.xid == 2) c->answer(2, 0x10, 0, encode(kNodeStat));
  };
  start(options(first.address() + "," + second.address()));
  std::vector<ZkResult> results;
  for (int i = 0; i < 2; ++i) {
    session->exists("/a", nullptr,
                    [&](ZkResult r, std::optional<ZkStat>) { results.push_back(r); });
  }
  ASSERT_TRUE(runUntil(io, [&] { return results.size() == 2 && events.size() >= 3; }));
  for (const auto& r : results) {
    EXPECT_EQ(r.kind, ZkResult::Kind::kUnavailable);
    EXPECT_NE(r.message.find("answer out of order"), std::string::npos) << r.message;
  }
  EXPECT_EQ(events[1].kind, ZkSessionEvent::Kind::kDisconnected);
  EXPECT_EQ(events[2].kind, ZkSessionEvent::Kind::kConnected);
  EXPECT_EQ(events[2].server, second.address());
  EXPECT_EQ(second.last()->connect->sessionId, 0x55);
}

TEST_F(ZkSessionTest, WatchesFireOnceWithTheServersEventOrConnectionLost) {
  JuteServer server(io);
  server.acceptSessions(0x55);
  server.onRequest = [](auto c, const Seen& seen) {
    if (seen.header.type == 12) {
      EXPECT_TRUE(decodePathWatchRequest(seen.body).value().watch);
      c->answer(seen.header.xid, 0x10, 0, encode(GetChildren2Response{{}, kNodeStat}));
    } else if (seen.header.type == 3) {
      EXPECT_TRUE(decodePathWatchRequest(seen.body).value().watch);
      c->answer(seen.header.xid, 0x10, -101);
    } else {
      c->answer(seen.header.xid, 0x10, 0, encode(kNodeStat));
    }
  };
  start(options(server.address()));
  std::vector<ZkWatchEvent> childEvents;
  std::vector<ZkWatchEvent> existsEvents;
  std::vector<ZkWatchEvent> lostEvents;
  int answered = 0;
  session->getChildren(
      "/e", [&](const ZkWatchEvent& e) { childEvents.push_back(e); },
      [&](ZkResult r, std::vector<std::string>) { answered += r.ok(); });
  session->exists(
      "/e/x", [&](const ZkWatchEvent& e) { existsEvents.push_back(e); },
      [&](ZkResult r, std::optional<ZkStat> stat) { answered += r.ok() && !stat; });
  ASSERT_TRUE(runUntil(io, [&] { return answered == 2; }));
  auto conn = server.last();
  conn->answer(kWatchEventXid, -1, 0, encode(WatcherEvent{4, 3, "/e"}));
  conn->answer(kWatchEventXid, -1, 0, encode(WatcherEvent{4, 3, "/e"}));  // fired already
  conn->answer(kWatchEventXid, -1, 0, encode(WatcherEvent{1, 3, "/e/x"}));
  ASSERT_TRUE(runUntil(io, [&] { return childEvents.size() == 1 && existsEvents.size() == 1; }));
  EXPECT_EQ(childEvents[0].kind, ZkWatchEvent::Kind::kChildrenChanged);
  EXPECT_EQ(childEvents[0].path, "/e");
  EXPECT_EQ(existsEvents[0].kind, ZkWatchEvent::Kind::kCreated);
  EXPECT_EQ(existsEvents[0].path, "/e/x");
  // A watch left when the connection goes fires kConnectionLost.
  session->exists(
      "/e/x", [&](const ZkWatchEvent& e) { lostEvents.push_back(e); },
      [&](ZkResult r, std::optional<ZkStat>) { answered += r.ok(); });
  ASSERT_TRUE(runUntil(io, [&] { return answered == 3; }));
  server.onConnect = [](auto) {};
  conn->close();
  ASSERT_TRUE(runUntil(io, [&] { return lostEvents.size() == 1; }));
  EXPECT_EQ(lostEvents[0].kind, ZkWatchEvent::Kind::kConnectionLost);
  EXPECT_EQ(lostEvents[0].path, "/e/x");
  net::test::runFor(io, 50ms);
  EXPECT_EQ(childEvents.size(), 1u);
  EXPECT_EQ(existsEvents.size(), 1u);
}

TEST_F(ZkSessionTest, ADeadlineFailsTheRequestAndTheSessionMovesToTheNextServer) {
  JuteServer first(io);
  JuteServer second(io);
  first.acceptSessions(0x55);
  second.acceptSessions(0x99);
  first.onRequest = [](auto c, const Seen& seen) {
    if (seen.header.xid == 1) c->answer(1, 0x100000042, 0, encode(kNodeStat));  // then silence
  };
  start(options(first.address() + "," + second.address()));
  ASSERT_TRUE(waitForEvents(1));
  std::vector<ZkResult> results;
  auto record = [&](ZkResult r, std::optional<ZkStat>) { results.push_back(r); };
  session->exists("/a", nullptr, record);
  session->exists("/b", nullptr, record);
  ASSERT_TRUE(
      runUntil(io, [&] { return results.size() == 1 && first.last()->requests.size() == 2; }));
  EXPECT_TRUE(results[0].ok());
  clock.advance(999ms);
  net::test::runFor(io, 20ms);
  EXPECT_EQ(results.size(), 1u);
  clock.advance(1ms);
  ASSERT_TRUE(runUntil(io, [&] { return results.size() == 2 && events.size() >= 3; }));
  EXPECT_EQ(results[1].kind, ZkResult::Kind::kUnavailable);
  EXPECT_NE(results[1].message.find("no answer from " + first.address() + " within 1s"),
            std::string::npos)
      << results[1].message;
  EXPECT_EQ(events[1].kind, ZkSessionEvent::Kind::kDisconnected);
  EXPECT_EQ(events[2].kind, ZkSessionEvent::Kind::kConnected);
  EXPECT_FALSE(events[2].newSession);
  EXPECT_EQ(events[2].sessionId, 0x55);
  EXPECT_EQ(*second.last()->connect,
            (ConnectRequest{0, 0x100000042, 6000, 0x55, std::string(16, 'P'), false}));
  EXPECT_TRUE(runUntil(io, [&] { return first.last()->closed(); }));
}

TEST_F(ZkSessionTest, AnExpiredSessionIsReportedAndANewOneStarts) {
  JuteServer first(io);
  JuteServer second(io);
  first.acceptSessions(0x55);
  start(options(first.address() + "," + second.address()));
  ASSERT_TRUE(waitForEvents(1));
  second.onConnect = [](auto c) {
    EXPECT_EQ(c->connect->sessionId, 0x55);
    c->write(frame(encode(ConnectResponse{0, 0, 0, std::string(16, '\0'), false})));
  };
  first.acceptSessions(0x77);
  first.last()->close();
  ASSERT_TRUE(waitForEvents(4));
  EXPECT_EQ(events[1].kind, ZkSessionEvent::Kind::kDisconnected);
  EXPECT_EQ(events[2].kind, ZkSessionEvent::Kind::kExpired);
  EXPECT_EQ(events[2].sessionId, 0x55);
  EXPECT_EQ(events[3].kind, ZkSessionEvent::Kind::kConnected);
  EXPECT_TRUE(events[3].newSession);
  EXPECT_EQ(events[3].sessionId, 0x77);
  EXPECT_EQ(first.last()->connect->sessionId, 0);
  EXPECT_EQ(session->sessionId(), 0x77);
}

TEST_F(ZkSessionTest, RefusedCredentialsEndTheSessionWithoutRetrying) {
  JuteServer server(io);
  server.acceptSessions(0x55);
  server.onRequest = [](auto c, const Seen& seen) {
    EXPECT_EQ(seen.header.xid, kAuthXid);
    EXPECT_EQ(seen.header.type, 100);
    EXPECT_EQ(decodeAuthPacket(seen.body).value(), (AuthPacket{0, "digest", "alice:s3cret"}));
    c->answer(kAuthXid, 0, -115);
  };
  auto o = options(server.address());
  o.credentials = ZkSession::Credentials{"alice", "s3cret"};
  start(std::move(o));
  ASSERT_TRUE(waitForEvents(1));
  EXPECT_EQ(events[0].kind, ZkSessionEvent::Kind::kAuthFailed);
  EXPECT_NE(events[0].detail.find("alice"), std::string::npos);
  EXPECT_EQ(events[0].detail.find("s3cret"), std::string::npos);
  std::optional<ZkResult> result;
  session->ping([&](ZkResult r) { result = r; });
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  EXPECT_EQ(result->kind, ZkResult::Kind::kDenied);
  EXPECT_TRUE(result->is(ZkCode::kAuthFailed));
  EXPECT_EQ(result->message.find("s3cret"), std::string::npos);
  clock.advance(10s);
  net::test::runFor(io, 50ms);
  EXPECT_EQ(server.connections.size(), 1u);
  EXPECT_EQ(events.size(), 1u);
}

TEST_F(ZkSessionTest, WithCredentialsNodesAreCreatorOnlyAndRequestsWaitForTheAuthentication) {
  JuteServer server(io);
  server.acceptSessions(0x55);
  server.onRequest = [](auto c, const Seen& seen) {
    if (seen.header.xid == kAuthXid) return c->answer(kAuthXid, 0, 0);
    EXPECT_EQ(decodeCreateRequest(seen.body).value().acl, (std::vector<Acl>{Acl{31, "auth", ""}}));
    c->answer(seen.header.xid, 0x10, 0, encode(CreateResponse{"/n", kNodeStat}));
  };
  auto o = options(server.address());
  o.credentials = ZkSession::Credentials{"alice", "s3cret"};
  start(std::move(o));
  std::optional<ZkResult> result;
  session->create("/n", "", ZkCreateMode::kPersistent,
                  [&](ZkResult r, std::string, ZkStat) { result = r; });
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  EXPECT_TRUE(result->ok()) << result->message;
  ASSERT_EQ(server.last()->requests.size(), 2u);
  EXPECT_EQ(server.last()->requests[0].header.xid, kAuthXid);
  EXPECT_EQ(events.at(0).kind, ZkSessionEvent::Kind::kConnected);
}

TEST_F(ZkSessionTest, TheChrootIsAddedToPathsAndStrippedFromAnswersAndEvents) {
  JuteServer server(io);
  server.acceptSessions(0x55);
  server.onRequest = [](auto c, const Seen& seen) {
    if (seen.header.type == 15) {
      EXPECT_EQ(decodeCreateRequest(seen.body).value().path, "/app/x/e/n-");
      return c->answer(seen.header.xid, 0x10, 0,
                       encode(CreateResponse{"/app/x/e/n-0000000001", kNodeStat}));
    }
    EXPECT_EQ(decodePathWatchRequest(seen.body).value().path, "/app/x");
    c->answer(seen.header.xid, 0x10, 0, encode(GetChildren2Response{{"e"}, kNodeStat}));
  };
  start(options(server.address() + "/app/x"));
  std::string created;
  std::vector<std::string> children;
  std::vector<ZkWatchEvent> watchEvents;
  session->create("/e/n-", "", ZkCreateMode::kEphemeralSequential,
                  [&](ZkResult r, std::string path, ZkStat) {
                    EXPECT_TRUE(r.ok()) << r.message;
                    created = path;
                  });
  session->getChildren(
      "/", [&](const ZkWatchEvent& e) { watchEvents.push_back(e); },
      [&](ZkResult, std::vector<std::string> c) { children = c; });
  ASSERT_TRUE(runUntil(io, [&] { return !children.empty(); }));
  EXPECT_EQ(created, "/e/n-0000000001");
  server.last()->answer(kWatchEventXid, -1, 0, encode(WatcherEvent{4, 3, "/app/x"}));
  ASSERT_TRUE(runUntil(io, [&] { return !watchEvents.empty(); }));
  EXPECT_EQ(watchEvents[0].path, "/");
}

TEST_F(ZkSessionTest, AnIdleSessionPingsAndAConnectionThatSaysNothingIsDropped) {
  JuteServer first(io);
  JuteServer second(io);
  first.acceptSessions(0x55);
  second.acceptSessions(0x55);
  bool answerPings = true;
  first.onRequest = [&](auto c, const Seen& seen) {
    EXPECT_EQ(seen.header.xid, kPingXid);
    EXPECT_EQ(seen.header.type, 11);
    if (answerPings) c->answer(kPingXid, 0x10, 0);
  };
  auto o = options(first.address() + "," + second.address());
  o.requestTimeout = 10s;  // longer than the liveness rule, which is what this is about
  start(std::move(o));
  ASSERT_TRUE(waitForEvents(1));
  clock.advance(1999ms);  // a third of 6 s: 2 s
  net::test::runFor(io, 20ms);
  EXPECT_TRUE(first.last()->requests.empty());
  clock.advance(1ms);
  ASSERT_TRUE(waitForRequests(first, 1));
  // A caller's ping behind it: once that is answered, so is the automatic one.
  bool answered = false;
  session->ping([&](ZkResult r) { answered = r.ok(); });
  ASSERT_TRUE(runUntil(io, [&] { return answered; }));
  answerPings = false;
  clock.advance(2000ms);  // the next automatic ping, unanswered
  ASSERT_TRUE(waitForRequests(first, 3));
  clock.advance(1999ms);  // 3999 ms since the last answer; dead at 4 s (two thirds)
  net::test::runFor(io, 20ms);
  EXPECT_EQ(events.size(), 1u);
  clock.advance(1ms);
  ASSERT_TRUE(waitForEvents(3));
  EXPECT_EQ(events[1].kind, ZkSessionEvent::Kind::kDisconnected);
  EXPECT_NE(events[1].detail.find("nothing from " + first.address() + " for 4s"), std::string::npos)
      << events[1].detail;
  EXPECT_EQ(events[2].kind, ZkSessionEvent::Kind::kConnected);
  EXPECT_EQ(events[2].server, second.address());
}

TEST_F(ZkSessionTest, ACallersPingIsAnsweredWithItsSentAt) {
  JuteServer server(io);
  server.acceptSessions(0x55);
  server.onRequest = [](auto c, const Seen& seen) { c->answer(seen.header.xid, 0x10, 0); };
  start(options(server.address()));
  ASSERT_TRUE(waitForEvents(1));
  clock.advance(300ms);
  std::optional<ZkResult> result;
  session->ping([&](ZkResult r) { result = r; });
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  EXPECT_TRUE(result->ok());
  EXPECT_EQ(result->sentAt, clock.now());
}

TEST_F(ZkSessionTest, RequestsMadeBeforeTheSessionWaitForItWithinTheirDeadline) {
  JuteServer server(io);
  server.onConnect = [](auto) {};  // never answers the handshake
  server.onRequest = [](auto c, const Seen& seen) { c->answer(seen.header.xid, 0x10, 0); };
  start(options(server.address()));
  std::optional<ZkResult> result;
  session->ping([&](ZkResult r) { result = r; });
  ASSERT_TRUE(runUntil(io, [&] { return server.last() && server.last()->connect; }));
  clock.advance(1000ms);
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  EXPECT_EQ(result->kind, ZkResult::Kind::kUnavailable);
  EXPECT_NE(result->message.find("no ZooKeeper session within 1s"), std::string::npos)
      << result->message;
}

TEST_F(ZkSessionTest, ARefusedServerIsSkippedAndAFullRoundOfFailuresBacksOff) {
  asio::ip::tcp::socket refusing(io);  // bound, never listening: connect is refused
  refusing.open(tcp::v4());
  refusing.bind({asio::ip::make_address("127.0.0.1"), 0});
  const std::string refused = "127.0.0.1:" + std::to_string(refusing.local_endpoint().port());
  JuteServer server(io);
  server.acceptSessions(0x55);
  start(options(refused + "," + server.address()));
  ASSERT_TRUE(waitForEvents(1));
  EXPECT_EQ(events[0].server, server.address());
  // Now both fail: one round, then a backoff of 100 ms before the next.
  server.onConnect = [](auto c) { c->close(); };
  server.last()->close();
  ASSERT_TRUE(
      runUntil(io, [&] { return server.connections.size() == 2 && server.last()->closed(); }));
  net::test::runFor(io, 50ms);
  EXPECT_EQ(server.connections.size(), 2u);
  clock.advance(100ms);
  ASSERT_TRUE(runUntil(io, [&] { return server.connections.size() == 3; }));
}

TEST_F(ZkSessionTest, AMalformedFrameDropsTheConnection) {
  JuteServer server(io);
  server.acceptSessions(0x55);
  server.onRequest = [](auto c, const Seen&) { c->write("\xff\xff\xff\xff"); };
  start(options(server.address()));
  std::optional<ZkResult> result;
  session->ping([&](ZkResult r) { result = r; });
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  EXPECT_EQ(result->kind, ZkResult::Kind::kUnavailable);
  EXPECT_NE(result->message.find("frame length -1"), std::string::npos) << result->message;
}

TEST_F(ZkSessionTest, CloseEndsTheSessionOnTheServer) {
  JuteServer server(io);
  server.acceptSessions(0x55);
  server.onRequest = [](auto c, const Seen& seen) {
    EXPECT_EQ(seen.header.type, -11);
    c->answer(seen.header.xid, 0x10, 0);
  };
  start(options(server.address()));
  ASSERT_TRUE(waitForEvents(1));
  bool closed = false;
  session->close([&] { closed = true; });
  ASSERT_TRUE(runUntil(io, [&] { return closed; }));
  net::test::runFor(io, 50ms);
  EXPECT_EQ(events.size(), 1u);  // no kDisconnected, no reconnection
  EXPECT_EQ(server.connections.size(), 1u);
  std::optional<ZkResult> result;
  session->ping([&](ZkResult r) { result = r; });
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  EXPECT_EQ(result->kind, ZkResult::Kind::kUnavailable);
}

TEST_F(ZkSessionTest, ADestroyedSessionDropsItsCallbacks) {
  JuteServer server(io);
  server.acceptSessions(0x55);
  server.onRequest = [](auto c, const Seen& seen) { c->answer(seen.header.xid, 0x10, 0); };
  start(options(server.address()));
  ASSERT_TRUE(waitForEvents(1));
  bool called = false;
  session->ping([&](ZkResult) { called = true; });
  ASSERT_TRUE(waitForRequests(server, 1));
  session.reset();
  net::test::runFor(io, 50ms);
  EXPECT_FALSE(called);
}

TEST_F(ZkSessionTest, TlsWithTheTestCaVerifiesTheServer) {
  const auto& certs = net::test::TestCertificates::get();
  JuteServer server(io, &certs.server);
  server.acceptSessions(0x55);
  auto o = options(server.address());
  o.tls = net::TlsOptions{};
  o.tls->caPem = certs.caPem;
  start(std::move(o));
  ASSERT_TRUE(waitForEvents(1));
  EXPECT_EQ(events[0].kind, ZkSessionEvent::Kind::kConnected);
  // All of it on the loop: no thread of asio's or OpenSSL's (the sidecar may have two).
  EXPECT_EQ(leasehold::testing::threadsInProcessOnceDownTo(1), 1u);
}

TEST_F(ZkSessionTest, TlsRefusesAServerCertificateForAnotherName) {
  const auto& certs = net::test::TestCertificates::get();
  JuteServer server(io, &certs.serverNamed);  // kube.internal only, not 127.0.0.1
  auto o = options(server.address());
  o.tls = net::TlsOptions{};
  o.tls->caPem = certs.caPem;
  start(std::move(o));
  std::optional<ZkResult> result;
  session->ping([&](ZkResult r) { result = r; });
  ASSERT_TRUE(runUntil(io, [&] { return server.last() && server.last()->closed(); }));
  clock.advance(1000ms);
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  EXPECT_EQ(result->kind, ZkResult::Kind::kUnavailable);
  EXPECT_NE(result->message.find("TLS handshake"), std::string::npos) << result->message;
  // The round of servers (one) failed: said once, with why, though no session ever began.
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ZkSessionEvent::Kind::kDisconnected);
  EXPECT_NE(events[0].detail.find("no server of the connect string answered"), std::string::npos)
      << events[0].detail;
  EXPECT_NE(events[0].detail.find("TLS handshake"), std::string::npos) << events[0].detail;
  EXPECT_FALSE(server.last()->connect);
}

TEST_F(ZkSessionTest, EveryConnectionAuthenticatesAgainBeforeRequestsGoOut) {
  JuteServer first(io);
  JuteServer second(io);
  first.acceptSessions(0x55);
  second.acceptSessions(0x55);
  auto answerAll = [](auto c, const Seen& seen) { c->answer(seen.header.xid, 0x10, 0); };
  first.onRequest = answerAll;
  second.onRequest = answerAll;
  auto o = options(first.address() + "," + second.address());
  o.credentials = ZkSession::Credentials{"alice", "s3cret"};
  start(std::move(o));
  ASSERT_TRUE(waitForEvents(1));
  first.last()->close();
  ASSERT_TRUE(waitForEvents(2));  // kDisconnected: the ping below waits for the next session
  std::optional<ZkResult> result;
  session->ping([&](ZkResult r) { result = r; });
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  EXPECT_TRUE(result->ok()) << result->message;
  ASSERT_EQ(second.last()->requests.size(), 2u);
  EXPECT_EQ(second.last()->requests[0].header.xid, kAuthXid);
  EXPECT_EQ(second.last()->requests[1].header.xid, kPingXid);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2].kind, ZkSessionEvent::Kind::kConnected);
  EXPECT_FALSE(events[2].newSession);
}

TEST_F(ZkSessionTest, ADeletedNodeFiresItsDataAndChildWatchesAndOtherPathsNone) {
  JuteServer server(io);
  server.acceptSessions(0x55);
  server.onRequest = [](auto c, const Seen& seen) {
    if (seen.header.type == 12) {
      return c->answer(seen.header.xid, 0x10, 0, encode(GetChildren2Response{{}, kNodeStat}));
    }
    c->answer(seen.header.xid, 0x10, 0, encode(kNodeStat));
  };
  start(options(server.address()));
  std::vector<ZkWatchEvent> fired;
  int answered = 0;
  auto watcher = [&](const ZkWatchEvent& e) { fired.push_back(e); };
  session->exists("/n", watcher, [&](ZkResult r, std::optional<ZkStat>) { answered += r.ok(); });
  session->getChildren("/n", watcher,
                       [&](ZkResult r, std::vector<std::string>) { answered += r.ok(); });
  session->exists("/other", watcher,
                  [&](ZkResult r, std::optional<ZkStat>) { answered += r.ok(); });
  ASSERT_TRUE(runUntil(io, [&] { return answered == 3; }));
  server.last()->answer(kWatchEventXid, -1, 0, encode(WatcherEvent{3, 3, "/unwatched"}));
  server.last()->answer(kWatchEventXid, -1, 0, encode(WatcherEvent{2, 3, "/n"}));
  ASSERT_TRUE(runUntil(io, [&] { return fired.size() == 2; }));
  net::test::runFor(io, 20ms);
  ASSERT_EQ(fired.size(), 2u);
  for (const auto& e : fired) {
    EXPECT_EQ(e.kind, ZkWatchEvent::Kind::kDeleted);
    EXPECT_EQ(e.path, "/n");
  }
}

// Answers every name with 127.0.0.1, or with a problem, on the loop.
class ScriptedResolver final : public net::HostResolver {
 public:
  explicit ScriptedResolver(asio::io_context& io) : io_(io) {}
  void resolve(const std::string& host, std::uint16_t, Abandoned,
               std::function<void(Answer)> done) override {
    asked.push_back(host);
    Answer answer;
    if (problem) {
      answer.problem = *problem;
    } else {
      answer.addresses = {"127.0.0.1"};
    }
    asio::post(io_, [done = std::move(done), answer] { done(answer); });
  }
  std::vector<std::string> asked;
  std::optional<std::string> problem;

 private:
  asio::io_context& io_;
};

TEST_F(ZkSessionTest, HostNamesAreLookedUpThroughTheResolver) {
  JuteServer server(io);
  server.acceptSessions(0x55);
  ScriptedResolver resolver(io);
  const std::string port = server.address().substr(server.address().rfind(':'));
  auto o = options("zk-0.zk.internal" + port);
  o.resolver = &resolver;
  start(std::move(o));
  ASSERT_TRUE(waitForEvents(1));
  EXPECT_EQ(resolver.asked, (std::vector<std::string>{"zk-0.zk.internal"}));
  EXPECT_EQ(events[0].server, "zk-0.zk.internal" + port);

  // A name that does not resolve is a failed try, named in the requests that found no session.
  ScriptedResolver failing(io);
  failing.problem = "Name or service not known";
  auto bad = options("zk-9.zk.internal:2181");
  bad.resolver = &failing;
  ZkSession other(io, clock, std::move(bad));
  other.open();
  std::optional<ZkResult> result;
  other.ping([&](ZkResult r) { result = r; });
  ASSERT_TRUE(runUntil(io, [&] { return !failing.asked.empty(); }));
  net::test::runFor(io, 20ms);
  clock.advance(1000ms);
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  EXPECT_NE(result->message.find("cannot resolve zk-9.zk.internal: Name or service not known"),
            std::string::npos)
      << result->message;
}

TEST_F(ZkSessionTest, ABadConnectStringIsAConfigurationErrorAndEveryRequestIsRejected) {
  ZkSession bad(io, clock, options("zk1:99999"));
  ASSERT_TRUE(bad.configurationError());
  EXPECT_EQ(*bad.configurationError(),
            "ZooKeeper connect string \"zk1:99999\": bad port in \"zk1:99999\"");
  bad.open();
  std::optional<ZkResult> result;
  bad.ping([&](ZkResult r) { result = r; });
  EXPECT_FALSE(result);
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  EXPECT_EQ(result->kind, ZkResult::Kind::kRejected);
  EXPECT_EQ(result->message, *bad.configurationError());
}

struct ParseCase {
  std::string text;
  std::vector<ZkServerAddress> servers;
  std::string chroot;
  std::string error;  // a part of the message
};

TEST(ZkConnectStringTest, ParsesServersAndChrootAndNamesTheBadPart) {
  const std::vector<ParseCase> table = {
      {"zk1:2181", {{"zk1", 2181}}, "", ""},
      {"zk1", {{"zk1", 2181}}, "", ""},
      {"10.0.0.1:2281,zk2:2182/leasehold/a",
       {{"10.0.0.1", 2281}, {"zk2", 2182}},
       "/leasehold/a",
       ""},
      {"[::1]:2181,[fe80::1]", {{"::1", 2181}, {"fe80::1", 2181}}, "", ""},
      {"zk1:2181/", {{"zk1", 2181}}, "", ""},
      {"zk1:99999", {}, "", "bad port in \"zk1:99999\""},
      {"zk1:", {}, "", "empty port in \"zk1:\""},
      {"zk1,,zk2", {}, "", "an empty server"},
      {"::1:2181", {}, "", "an IPv6 address goes in brackets"},
      {"[::1:2181", {}, "", "unclosed '['"},
      {"[zk1]:2181", {}, "", "bad IPv6 address in \"[zk1]:2181\""},
      {"zk1/a/", {}, "", "bad chroot \"/a/\""},
      {":2181", {}, "", "empty host"},
      {"", {}, "", "an empty server"},
  };
  for (const auto& c : table) {
    SCOPED_TRACE(c.text);
    auto parsed = parseConnectString(c.text);
    if (!c.error.empty()) {
      ASSERT_TRUE(std::holds_alternative<std::string>(parsed));
      EXPECT_NE(std::get<std::string>(parsed).find(c.error), std::string::npos)
          << std::get<std::string>(parsed);
      continue;
    }
    ASSERT_TRUE(std::holds_alternative<ZkConnectString>(parsed)) << std::get<std::string>(parsed);
    EXPECT_EQ(std::get<ZkConnectString>(parsed).servers, c.servers);
    EXPECT_EQ(std::get<ZkConnectString>(parsed).chroot, c.chroot);
  }
  EXPECT_EQ((ZkServerAddress{"::1", 2181}).text(), "[::1]:2181");
}

}  // namespace
}  // namespace leasehold::zookeeper

// The status/probe server: routing, limits, keep-alive, pipelining, event streams, stop.
#include "net/HttpServer.h"

#include <gtest/gtest.h>

#include "Fetch.h"
#include "RawClient.h"

namespace leasehold::net::test {
namespace {

using namespace std::chrono_literals;

class HttpServerTest : public ::testing::Test {
 protected:
  boost::asio::io_context io;
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<HttpsClient> client;
  ServerRequest lastRequest;

  void start(HttpServer::Options options = {}) {
    server = std::make_unique<HttpServer>(io, options);
    server->route("GET", "/leader", [this](const ServerRequest& request) {
      lastRequest = request;
      return ServerResponse{200, "application/json", "{\"leader\":true}", {{"X-Extra", "1"}}};
    });
    server->route("POST", "/echo", [](const ServerRequest& request) {
      return ServerResponse{200, "text/plain", request.body, {}};
    });
    server->route("GET", "/boom", [](const ServerRequest&) -> ServerResponse {
      throw std::runtime_error("handler bug");
    });
    ASSERT_FALSE(server->listen());
    ASSERT_NE(server->port(), 0);
    client =
        std::make_unique<HttpsClient>(io, "http://127.0.0.1:" + std::to_string(server->port()));
  }

  std::shared_ptr<RawClient> raw(bool reading = true, int receiveBuffer = 0) {
    auto connection = RawClient::connect(io, server->port(), reading, receiveBuffer);
    EXPECT_TRUE(runUntil(io, [&] { return connection->connected() || connection->failed(); }));
    return connection;
  }
};

TEST_F(HttpServerTest, RoutesWithPathAndQuery) {
  start();
  auto result = fetch(io, *client, get("/leader?verbose=1&x=2"));
  ASSERT_TRUE(result && result->ok()) << result->error().message;
  EXPECT_EQ(result->response().status, 200);
  EXPECT_EQ(result->response().body, "{\"leader\":true}");
  EXPECT_EQ(result->response().headers.get("content-type"), "application/json");
  EXPECT_EQ(result->response().headers.get("x-extra"), "1");
  EXPECT_EQ(lastRequest.method, "GET");
  EXPECT_EQ(lastRequest.path, "/leader");
  EXPECT_EQ(lastRequest.query, "verbose=1&x=2");
  EXPECT_EQ(lastRequest.target, "/leader?verbose=1&x=2");
  EXPECT_TRUE(lastRequest.headers.get("host"));
}

TEST_F(HttpServerTest, PostBody) {
  start();
  HttpsClient::Request request = get("/echo");
  request.method = "POST";
  request.body = "payload";
  auto result = fetch(io, *client, request);
  ASSERT_TRUE(result && result->ok());
  EXPECT_EQ(result->response().body, "payload");
}

TEST_F(HttpServerTest, UnknownPathIs404AndWrongMethodIs405WithAllow) {
  start();
  auto missing = fetch(io, *client, get("/nope"));
  ASSERT_TRUE(missing && missing->ok());
  EXPECT_EQ(missing->response().status, 404);
  HttpsClient::Request del = get("/leader");
  del.method = "DELETE";
  auto wrong = fetch(io, *client, del);
  ASSERT_TRUE(wrong && wrong->ok());
  EXPECT_EQ(wrong->response().status, 405);
  EXPECT_EQ(wrong->response().headers.get("allow"), "GET, HEAD");
}

TEST_F(HttpServerTest, HeadUsesGetHandlerWithoutBody) {
  start();
  HttpsClient::Request head = get("/leader");
  head.method = "HEAD";
  auto result = fetch(io, *client, head);
  ASSERT_TRUE(result && result->ok());
  EXPECT_EQ(result->response().status, 200);
  EXPECT_EQ(result->response().headers.get("content-length"), "15");
  EXPECT_EQ(result->response().body, "");
}

TEST_F(HttpServerTest, HandlerExceptionIs500) {
  start();
  auto result = fetch(io, *client, get("/boom"));
  ASSERT_TRUE(result && result->ok());
  EXPECT_EQ(result->response().status, 500);
  EXPECT_TRUE(fetch(io, *client, get("/leader"))->ok()) << "server still serves";
}

TEST_F(HttpServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  start();
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(fetch(io, *client, get("/leader"))->ok());
  EXPECT_EQ(server->connectionCount(), 1u);
}

TEST_F(HttpServerTest, PipelinedRequestsAnsweredInOrder) {
  start();
  auto connection = raw();
  connection->send(
      "GET /leader HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nfirst"
      "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecond");
  ASSERT_TRUE(runUntil(io, [&] { return connection->eof(); }));
  const std::string& text = connection->received();
  EXPECT_EQ(connection->count("HTTP/1.1 "), 4u) << text;
  const auto leader = text.find("{\"leader\":true}");
  const auto first = text.find("first");
  const auto notFound = text.find("404");
  const auto second = text.find("second");
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_LT(leader, first);
  EXPECT_LT(first, notFound);
  EXPECT_LT(notFound, second);
  EXPECT_NE(text.find("Connection: close"), std::string::npos);
}

TEST_F(HttpServerTest, ConnectionCloseIsHonoured) {
  start();
  auto connection = raw();
  connection->send("GET /leader HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(runUntil(io, [&] { return connection->eof(); }));
  EXPECT_TRUE(connection->received().starts_with("HTTP/1.1 200 OK\r\n"));
  EXPECT_NE(connection->received().find("Connection: close\r\n"), std::string::npos);
}

TEST_F(HttpServerTest, Http10WithoutKeepAliveCloses) {
  start();
  auto connection = raw();
  connection->send("GET /leader HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(runUntil(io, [&] { return connection->eof(); }));
  EXPECT_TRUE(connection->received().starts_with("HTTP/1.1 200 OK\r\n"));
}

TEST_F(HttpServerTest, OversizedHeaderIs431ThenClose) {
  start();
  auto connection = raw();
  connection->send("GET /leader HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(9000, 'a') +
                   "\r\n\r\n");
  ASSERT_TRUE(runUntil(io, [&] { return connection->eof(); }));
  EXPECT_TRUE(connection->received().starts_with("HTTP/1.1 431 ")) << connection->received();
}

TEST_F(HttpServerTest, OversizedBodyIs413ThenClose) {
  HttpServer::Options options;
  options.maxBodyBytes = 1000;
  start(options);
  auto connection = raw();
  connection->send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" +
                   std::string(5000, 'b'));
  ASSERT_TRUE(runUntil(io, [&] { return connection->eof(); }));
  EXPECT_TRUE(connection->received().starts_with("HTTP/1.1 413 ")) << connection->received();
}

TEST_F(HttpServerTest, OversizedChunkedBodyIs413) {
  HttpServer::Options options;
  options.maxBodyBytes = 1000;
  start(options);
  auto connection = raw();
  std::string body;
  for (int i = 0; i < 4; ++i)
    body += "200\r\n" + std::string(512, 'c') + "\r\n";
  connection->send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body +
                   "0\r\n\r\n");
  ASSERT_TRUE(runUntil(io, [&] { return connection->eof(); }));
  EXPECT_TRUE(connection->received().starts_with("HTTP/1.1 413 ")) << connection->received();
}

TEST_F(HttpServerTest, MalformedRequestIs400ThenClose) {
  start();
  auto connection = raw();
  connection->send("THIS IS NOT HTTP\r\n\r\n");
  ASSERT_TRUE(runUntil(io, [&] { return connection->eof(); }));
  EXPECT_TRUE(connection->received().starts_with("HTTP/1.1 400 ")) << connection->received();
}

TEST_F(HttpServerTest, IdleConnectionsAreClosed) {
  HttpServer::Options options;
  options.idleTimeout = 1s;
  start(options);
  auto connection = raw();
  const auto begin = std::chrono::steady_clock::now();
  ASSERT_TRUE(runUntil(
      io, [&] { return connection->eof(); }, 5s));
  EXPECT_GE(std::chrono::steady_clock::now() - begin, 900ms);
}

// No connection, no wake-ups: the idle sweep is armed only while a connection exists (a
// follower's servers sit idle between probes), and it comes back with the next connection.
TEST_F(HttpServerTest, AnIdleServerRunsNoTimersAndSweepsAgainForTheNextConnection) {
  HttpServer::Options options;
  options.idleTimeout = 1s;  // the sweep period too
  start(options);
  EXPECT_EQ(io.run_for(1200ms), 0u) << "no handler ran while nobody was connected";
  for (int round = 0; round < 2; ++round) {
    auto connection = raw();
    ASSERT_TRUE(runUntil(
        io, [&] { return connection->eof(); }, 5s))
        << "round " << round << ": the idle connection was not closed";
    connection.reset();
    if (round == 1) break;
    runFor(io, 1200ms);  // the server side winds down (aborted reads, one last sweep)
    EXPECT_EQ(io.run_for(1200ms), 0u) << "still waking up after the last connection closed";
  }
}

TEST_F(HttpServerTest, ConnectionsBeyondTheLimitAreRefused) {
  HttpServer::Options options;
  options.maxConnections = 2;
  start(options);
  auto a = raw();
  auto b = raw();
  ASSERT_TRUE(runUntil(io, [&] { return server->connectionCount() == 2; }));
  auto c = raw();
  ASSERT_TRUE(runUntil(io, [&] { return c->eof(); }));
  EXPECT_FALSE(a->eof());
  a->send("GET /leader HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(runUntil(io, [&] { return a->count("HTTP/1.1 200") == 1; }));
}

TEST_F(HttpServerTest, ListenFailureNamesTheAddress) {
  start();
  HttpServer::Options options;
  options.port = server->port();
  HttpServer second(io, options);
  auto error = second.listen();
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("127.0.0.1:" + std::to_string(server->port())), std::string::npos)
      << *error;
  HttpServer::Options bad;
  bad.address = "not-an-address";
  auto badError = HttpServer(io, bad).listen();
  ASSERT_TRUE(badError);
  EXPECT_NE(badError->find("not-an-address"), std::string::npos);
}

class EventStreamServerTest : public HttpServerTest {
 protected:
  std::vector<std::shared_ptr<EventStream>> streams;

  void startWithEvents(std::size_t bufferBytes = 64 * 1024) {
    HttpServer::Options options;
    options.eventStreamBufferBytes = bufferBytes;
    start(options);
    server->routeEvents("/leader/watch", [this](std::shared_ptr<EventStream> stream) {
      stream->send("{\"hello\":1}");
      streams.push_back(std::move(stream));
    });
  }
  std::shared_ptr<RawClient> subscribe(bool reading = true, int receiveBuffer = 0) {
    auto connection = raw(reading, receiveBuffer);
    connection->send("GET /leader/watch HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n");
    const auto expected = streams.size() + 1;
    EXPECT_TRUE(runUntil(io, [&] { return streams.size() == expected; }));
    return connection;
  }
};

TEST_F(EventStreamServerTest, SendsHeadersEventsAndComments) {
  startWithEvents();
  auto connection = subscribe();
  ASSERT_TRUE(runUntil(io, [&] { return connection->count("data: {\"hello\":1}\n\n") == 1; }));
  const std::string& text = connection->received();
  EXPECT_TRUE(text.starts_with("HTTP/1.1 200 OK\r\n"));
  EXPECT_NE(text.find("Content-Type: text/event-stream\r\n"), std::string::npos);
  EXPECT_NE(text.find("Cache-Control: no-cache\r\n"), std::string::npos);
  EXPECT_EQ(text.find("Content-Length"), std::string::npos);
  EXPECT_EQ(server->eventStreamCount(), 1u);
  EXPECT_TRUE(streams[0]->send("line1\nline2"));
  EXPECT_TRUE(streams[0]->comment("keep-alive"));
  ASSERT_TRUE(runUntil(io, [&] { return connection->count(": keep-alive\n") == 1; }));
  EXPECT_NE(text.find("data: line1\ndata: line2\n\n: keep-alive\n"), std::string::npos);
}

TEST_F(EventStreamServerTest, ClientDisconnectClosesTheStream) {
  startWithEvents();
  auto connection = subscribe();
  bool closedCallback = false;
  streams[0]->onClose([&] { closedCallback = true; });
  connection->close();
  ASSERT_TRUE(runUntil(io, [&] { return streams[0]->closed() && closedCallback; }));
  EXPECT_EQ(server->eventStreamCount(), 0u);
  EXPECT_FALSE(streams[0]->send("late"));
}

TEST_F(EventStreamServerTest, SlowClientIsDroppedWithoutStallingOthers) {
  startWithEvents(16 * 1024);
  auto slow = subscribe(/*reading=*/false, /*receiveBuffer=*/4096);
  auto fast = subscribe();
  ASSERT_EQ(server->eventStreamCount(), 2u);
  const std::string payload(1000, 'p');
  std::size_t sent = 0;
  while (!streams[0]->closed() && sent < 50000) {
    for (int i = 0; i < 8; ++i) {  // 8 KB per round: fits the 16 KiB buffer of the fast client
      streams[0]->send(payload);
      ASSERT_TRUE(streams[1]->send(payload)) << "fast client dropped after " << sent;
      ++sent;
    }
    // The fast client keeps up: let it read what was sent before sending more.
    ASSERT_TRUE(runUntil(io, [&] { return fast->count(payload) == sent; }));
  }
  EXPECT_TRUE(streams[0]->closed()) << "slow client never dropped after " << sent << " events";
  EXPECT_FALSE(streams[1]->closed());
  EXPECT_EQ(server->eventStreamCount(), 1u);
  ASSERT_TRUE(streams[1]->send("after"));
  ASSERT_TRUE(runUntil(io, [&] { return fast->count("data: after\n\n") == 1; }));
}

TEST_F(EventStreamServerTest, GracefulStopFinishesResponsesAndClosesEverything) {
  startWithEvents();
  auto stream = subscribe();
  auto idle = raw();
  idle->send("GET /leader HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(runUntil(io, [&] { return idle->count("HTTP/1.1 200") == 1; }));
  // A handler that stops the server still gets its (large) response out completely.
  const std::string big(2 * 1024 * 1024, 'z');
  server->route("GET", "/bye", [&](const ServerRequest&) {
    server->stop();
    return ServerResponse{200, "text/plain", big, {}};
  });
  auto last = raw();
  last->send("GET /bye HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(runUntil(io, [&] { return last->eof() && idle->eof() && stream->eof(); }));
  EXPECT_EQ(last->count(big), 1u);
  EXPECT_TRUE(streams[0]->closed());
  EXPECT_EQ(server->eventStreamCount(), 0u);
  ASSERT_TRUE(runUntil(io, [&] { return server->connectionCount() == 0; }));
  auto refused = RawClient::connect(io, server->port());
  ASSERT_TRUE(runUntil(io, [&] { return refused->failed() || refused->eof(); }));
  // Nothing of the server is left on the io_context.
  refused.reset();
  stream.reset();
  idle.reset();
  last.reset();
  client.reset();
  io.restart();
  io.run_for(2s);
  EXPECT_TRUE(io.stopped());
}

TEST(EventStreamFormatTest, SplitsLinesAndSizesMatch) {
  std::string out;
  EventStream::appendEvent(out, "a\r\nb\rc\nd");
  EXPECT_EQ(out, "data: a\ndata: b\ndata: c\ndata: d\n\n");
  EXPECT_EQ(EventStream::eventSize("a\r\nb\rc\nd"), out.size());
  out.clear();
  EventStream::appendEvent(out, "");
  EXPECT_EQ(out, "data: \n\n");
  out.clear();
  EventStream::appendComment(out, "x\ny");
  EXPECT_EQ(out, ": x\n: y\n");
  EXPECT_EQ(EventStream::commentSize("x\ny"), out.size());
}

}  // namespace
}  // namespace leasehold::net::test

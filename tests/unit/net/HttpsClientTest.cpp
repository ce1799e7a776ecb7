// Ordinary requests over plain HTTP against a scripted server: keep-alive, reconnects, the retry
// rule, deadlines, limits and the callback contract. (TLS is covered in HttpsClientTlsTest.)
#include <gtest/gtest.h>

#include "Fetch.h"
#include "ScriptedServer.h"

namespace leasehold::net::test {
namespace {

using Kind = HttpsClient::Error::Kind;
using namespace std::chrono_literals;

class HttpsClientTest : public ::testing::Test {
 protected:
  boost::asio::io_context io;
  ScriptedServer server{io, std::nullopt,
                        [](std::shared_ptr<ScriptedConnection> connection, const std::string&) {
                          connection->write(ScriptedServer::response(200, "ok"));
                        }};

  // One request answered, after which the server closes the connection, as servers do with
  // idle ones: the client is left holding a connection that is gone. Closed silently (FIN), the
  // client's next write goes out and its read finds EOF; reset (RST, as a load balancer or proxy
  // does), its next write fails before any of the request gets out. Later requests are answered.
  enum class Ending { kClose, kReset };
  void leaveADeadIdleConnection(HttpsClient& client, Ending ending = Ending::kClose) {
    server.setOnRequest([ending](auto connection, const std::string&) {
      connection->write(ScriptedServer::response(200, "ok"));
      ending == Ending::kReset ? connection->resetAfterWrites() : connection->closeAfterWrites();
    });
    ASSERT_TRUE(fetch(io, client, get("/"))->ok());
    ASSERT_TRUE(runUntil(io, [&] { return server.lastConnection()->closed(); }));
    runFor(io, 20ms);  // the FIN or RST reaches the client's socket
    server.setOnRequest([](auto connection, const std::string&) {
      connection->write(ScriptedServer::response(200, "ok"));
    });
  }
  static HttpsClient::Options limitedTo(std::size_t maxResponseBytes) {
    HttpsClient::Options options;
    options.maxResponseBytes = maxResponseBytes;
    return options;
  }
  static HttpsClient::Request withBody(std::string method, std::string target) {
    HttpsClient::Request request = get(std::move(target));
    request.method = std::move(method);
    request.body = "{}";
    return request;
  }
};

TEST_F(HttpsClientTest, SendsHostAndFramesTheBody) {
  HttpsClient client(io, server.url());
  HttpsClient::Request request;
  request.method = "PUT";
  request.target = "/apis/x?y=1";
  request.headers = {{"Content-Type", "application/json"}, {"Content-Length", "999"}};
  request.body = "{\"a\":1}";
  auto result = fetch(io, client, request);
  ASSERT_TRUE(result && result->ok());
  const std::string& sent = server.lastConnection()->requests().at(0);
  EXPECT_TRUE(sent.starts_with("PUT /apis/x?y=1 HTTP/1.1\r\n")) << sent;
  EXPECT_NE(sent.find("Host: 127.0.0.1:" + std::to_string(server.port()) + "\r\n"),
            std::string::npos);
  EXPECT_NE(sent.find("Content-Length: 7\r\n"), std::string::npos) << sent;
  // The header, not the digits: the Host line's random port may hold "999" (it did once, in a
  // gate run: its third to fifth digits).
  EXPECT_EQ(sent.find("Content-Length: 999"), std::string::npos)
      << "caller framing must not be sent";
  EXPECT_TRUE(sent.ends_with("\r\n\r\n{\"a\":1}"));
}

TEST_F(HttpsClientTest, PathPrefixOfTheBaseUrlIsPrepended) {
  HttpsClient client(io, server.url() + "/k8s/clusters/c-1/");
  auto result = fetch(io, client, get("/api/v1"));
  ASSERT_TRUE(result && result->ok());
  EXPECT_TRUE(server.lastConnection()->requests().at(0).starts_with(
      "GET /k8s/clusters/c-1/api/v1 HTTP/1.1\r\n"));
}

TEST_F(HttpsClientTest, ResponseHeadersAreCaseInsensitive) {
  server.setOnRequest([](auto connection, const std::string&) {
    connection->write(ScriptedServer::response(201, "b", "X-Thing: v1\r\n"));
  });
  HttpsClient client(io, server.url());
  auto result = fetch(io, client, get("/"));
  ASSERT_TRUE(result && result->ok());
  EXPECT_EQ(result->response().status, 201);
  EXPECT_EQ(result->response().headers.get("x-thing"), "v1");
  EXPECT_EQ(result->response().headers.get("CONTENT-LENGTH"), "1");
  EXPECT_FALSE(result->response().headers.get("missing"));
}

TEST_F(HttpsClientTest, QueuedRequestsShareOneKeepAliveConnectionInOrder) {
  HttpsClient client(io, server.url());
  server.setOnRequest([](auto connection, const std::string& request) {
    const auto target = request.substr(4, request.find(' ', 4) - 4);
    connection->write(ScriptedServer::response(200, target));
  });
  std::vector<std::string> bodies;
  for (int i = 0; i < 5; ++i) {
    client.request(get("/" + std::to_string(i)), [&](HttpsClient::Result result) {
      bodies.push_back(result.ok() ? result.response().body : result.error().message);
    });
  }
  ASSERT_TRUE(runUntil(io, [&] { return bodies.size() == 5; }));
  EXPECT_EQ(bodies, (std::vector<std::string>{"/0", "/1", "/2", "/3", "/4"}));
  EXPECT_EQ(server.accepts(), 1);
}

TEST_F(HttpsClientTest, CallbackNeverRunsInsideRequest) {
  HttpsClient client(io, "not a url");
  ASSERT_TRUE(client.configurationError());
  bool called = false;
  client.request(get("/"), [&](HttpsClient::Result result) {
    called = true;
    EXPECT_EQ(result.error().kind, Kind::Connect);
  });
  EXPECT_FALSE(called);
  ASSERT_TRUE(runUntil(io, [&] { return called; }));
}

TEST_F(HttpsClientTest, ReconnectsWhenServerSaysConnectionClose) {
  server.setOnRequest([](auto connection, const std::string&) {
    connection->write(ScriptedServer::response(200, "ok", "Connection: close\r\n"));
    connection->closeAfterWrites();
  });
  HttpsClient client(io, server.url());
  for (int i = 0; i < 3; ++i) {
    auto result = fetch(io, client, get("/"));
    ASSERT_TRUE(result && result->ok()) << result->error().message;
  }
  EXPECT_EQ(server.accepts(), 3);
}

TEST_F(HttpsClientTest, RetriesIdempotentRequestOnceWhenIdleConnectionWasClosed) {
  HttpsClient client(io, server.url());
  leaveADeadIdleConnection(client);
  auto result = fetch(io, client, withBody("PUT", "/lease"));
  ASSERT_TRUE(result);
  EXPECT_TRUE(result->ok()) << result->error().message;
  EXPECT_EQ(server.accepts(), 2);
}

// A write that fails on a reused connection is retried whatever the method: the server cannot
// have acted on a request it never received whole. The previous response's bytes on that
// connection are not an answer to this request (they once blocked the retry).
TEST_F(HttpsClientTest, RetriesAnyRequestWhoseWriteFailedOnAResetIdleConnection) {
  for (const std::string method : {"PUT", "POST", "GET"}) {
    SCOPED_TRACE(method);
    HttpsClient client(io, server.url());
    const int acceptsBefore = server.accepts();
    leaveADeadIdleConnection(client, Ending::kReset);
    auto result = fetch(io, client, withBody(method, "/lease"));
    ASSERT_TRUE(result);
    EXPECT_TRUE(result->ok()) << result->error().message;
    EXPECT_EQ(server.accepts(), acceptsBefore + 2);
    EXPECT_EQ(server.lastConnection()->requestCount(), 1u);
  }
}

TEST_F(HttpsClientTest, DoesNotRetryPostThatMayHaveBeenReceived) {
  HttpsClient client(io, server.url());
  leaveADeadIdleConnection(client);
  EXPECT_TRUE(failedWith(fetch(io, client, withBody("POST", "/events")), Kind::Closed));
  EXPECT_EQ(server.accepts(), 1);
  // The next request connects afresh.
  EXPECT_TRUE(fetch(io, client, get("/"))->ok());
}

TEST_F(HttpsClientTest, DeadlineFiresWhenServerNeverAnswers) {
  server.setOnRequest([](auto, const std::string&) {});
  HttpsClient client(io, server.url());
  HttpsClient::Request request = get("/slow");
  request.deadline = 200ms;
  int calls = 0;
  std::optional<HttpsClient::Result> result;
  const auto start = std::chrono::steady_clock::now();
  client.request(request, [&](HttpsClient::Result r) {
    ++calls;
    result = std::move(r);
  });
  ASSERT_TRUE(runUntil(io, [&] { return result.has_value(); }));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(result->ok());
  EXPECT_EQ(result->error().kind, Kind::Timeout);
  EXPECT_GE(elapsed, 190ms);
  EXPECT_LT(elapsed, 3s);
  runFor(io, 50ms);
  EXPECT_EQ(calls, 1);
  // The connection was torn down: the server sees it close.
  ASSERT_TRUE(runUntil(io, [&] { return server.lastConnection()->closed(); }));
}

TEST_F(HttpsClientTest, DeadlineCoversTimeSpentInTheQueue) {
  server.setOnRequest([](auto, const std::string&) {});
  HttpsClient client(io, server.url());
  HttpsClient::Request slow = get("/slow");
  slow.deadline = 5s;
  HttpsClient::Request queued = get("/queued");
  queued.deadline = 100ms;
  std::optional<HttpsClient::Result> queuedResult;
  client.request(slow, [](HttpsClient::Result) {});
  client.request(queued, [&](HttpsClient::Result r) { queuedResult = std::move(r); });
  ASSERT_TRUE(runUntil(
      io, [&] { return queuedResult.has_value(); }, 2s));
  EXPECT_EQ(queuedResult->error().kind, Kind::Timeout);
  client.shutdown();
}

TEST_F(HttpsClientTest, ResponseBodyOverTheLimitIsTooLarge) {
  server.setOnRequest([](auto connection, const std::string&) {
    connection->write(ScriptedServer::response(200, std::string(5000, 'x')));
  });
  HttpsClient client(io, server.url(), {}, limitedTo(1024));
  EXPECT_TRUE(failedWith(fetch(io, client, get("/")), Kind::TooLarge));
}

TEST_F(HttpsClientTest, ChunkedBodyOverTheLimitIsTooLarge) {
  server.setOnRequest([](auto connection, const std::string&) {
    std::string chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 10; ++i)
      chunked += "200\r\n" + std::string(512, 'y') + "\r\n";
    connection->write(chunked + "0\r\n\r\n");
  });
  HttpsClient client(io, server.url(), {}, limitedTo(2048));
  EXPECT_TRUE(failedWith(fetch(io, client, get("/")), Kind::TooLarge));
}

TEST_F(HttpsClientTest, ReadsChunkedAndCloseDelimitedBodies) {
  server.setOnRequest([](auto connection, const std::string& request) {
    if (request.starts_with("GET /chunked")) {
      connection->write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
      connection->write("2\r\nde\r\n0\r\n\r\n");
    } else {
      connection->write("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-close");
      connection->closeAfterWrites();
    }
  });
  HttpsClient client(io, server.url());
  auto chunked = fetch(io, client, get("/chunked"));
  ASSERT_TRUE(chunked && chunked->ok());
  EXPECT_EQ(chunked->response().body, "abcde");
  auto closeDelimited = fetch(io, client, get("/close"));
  ASSERT_TRUE(closeDelimited && closeDelimited->ok()) << closeDelimited->error().message;
  EXPECT_EQ(closeDelimited->response().body, "until-close");
}

TEST_F(HttpsClientTest, TruncatedResponseIsClosedError) {
  server.setOnRequest([](auto connection, const std::string&) {
    connection->write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort");
    connection->closeAfterWrites();
  });
  HttpsClient client(io, server.url());
  EXPECT_TRUE(failedWith(fetch(io, client, get("/")), Kind::Closed));
}

TEST_F(HttpsClientTest, GarbageIsProtocolError) {
  server.setOnRequest(
      [](auto connection, const std::string&) { connection->write("SMTP ready\r\n\r\n"); });
  HttpsClient client(io, server.url());
  EXPECT_TRUE(failedWith(fetch(io, client, get("/")), Kind::Protocol));
}

TEST_F(HttpsClientTest, HeaderInjectionIsRefusedWithoutEchoingTheValue) {
  HttpsClient client(io, server.url());
  HttpsClient::Request request = get("/");
  request.headers = {{"Authorization", "Bearer secret-token\r\nX-Evil: 1"}};
  auto result = fetch(io, client, request);
  ASSERT_TRUE(failedWith(result, Kind::Protocol));
  EXPECT_EQ(result->error().message.find("secret"), std::string::npos);
  EXPECT_EQ(server.accepts(), 0);
}

TEST_F(HttpsClientTest, ConnectionRefusedIsConnectError) {
  std::uint16_t closedPort;
  {
    ScriptedServer temporary(io, std::nullopt, {});
    closedPort = temporary.port();
  }
  HttpsClient client(io, "http://127.0.0.1:" + std::to_string(closedPort));
  EXPECT_TRUE(failedWith(fetch(io, client, get("/")), Kind::Connect));
}

TEST_F(HttpsClientTest, HeadResponseHasNoBody) {
  server.setOnRequest([](auto connection, const std::string&) {
    connection->write("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n");
  });
  HttpsClient client(io, server.url());
  HttpsClient::Request head = get("/");
  head.method = "HEAD";
  auto result = fetch(io, client, head);
  ASSERT_TRUE(result && result->ok()) << result->error().message;
  EXPECT_EQ(result->response().body, "");
  EXPECT_TRUE(fetch(io, client, head)->ok()) << "connection still in sync";
  EXPECT_EQ(server.accepts(), 1);
}

TEST_F(HttpsClientTest, ShutdownCancelsQueuedAndInFlightRequests) {
  server.setOnRequest([](auto, const std::string&) {});
  HttpsClient client(io, server.url());
  std::vector<Kind> kinds;
  for (int i = 0; i < 3; ++i) {
    client.request(get("/"), [&](HttpsClient::Result r) { kinds.push_back(r.error().kind); });
  }
  ASSERT_TRUE(runUntil(io, [&] { return server.accepts() == 1; }));
  client.shutdown();
  EXPECT_TRUE(kinds.empty()) << "callbacks are asynchronous";
  ASSERT_TRUE(runUntil(io, [&] { return kinds.size() == 3; }));
  EXPECT_EQ(kinds, (std::vector<Kind>{Kind::Cancelled, Kind::Cancelled, Kind::Cancelled}));
  bool late = false;
  client.request(get("/"), [&](HttpsClient::Result r) {
    late = true;
    EXPECT_EQ(r.error().kind, Kind::Cancelled);
  });
  ASSERT_TRUE(runUntil(io, [&] { return late; }));
}

TEST_F(HttpsClientTest, DestroyingTheClientDropsCallbacksAndLetsTheLoopFinish) {
  server.setOnRequest([](auto, const std::string&) {});
  bool called = false;
  {
    HttpsClient client(io, server.url());
    client.request(get("/"), [&](HttpsClient::Result) { called = true; });
    ASSERT_TRUE(runUntil(io, [&] { return server.accepts() == 1; }));
  }
  ASSERT_TRUE(runUntil(io, [&] { return server.lastConnection()->closed(); }));
  runFor(io, 20ms);
  EXPECT_FALSE(called);
}

TEST_F(HttpsClientTest, CallbackMayIssueTheNextRequest) {
  HttpsClient client(io, server.url());
  int done = 0;
  std::function<void(HttpsClient::Result)> next = [&](HttpsClient::Result result) {
    ASSERT_TRUE(result.ok());
    if (++done < 3) client.request(get("/"), next);
  };
  client.request(get("/"), next);
  ASSERT_TRUE(runUntil(io, [&] { return done == 3; }));
  EXPECT_EQ(server.accepts(), 1);
}

}  // namespace
}  // namespace leasehold::net::test

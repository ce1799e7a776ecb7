// Streams (watches): chunked and Content-Length bodies delivered as they arrive, error statuses,
// idle and header timeouts, cancel, and shutdown.
#include <gtest/gtest.h>

#include "Fetch.h"
#include "ScriptedServer.h"
#include "net/LineSplitter.h"

namespace leasehold::net::test {
namespace {

using Kind = HttpsClient::Error::Kind;
using namespace std::chrono_literals;

std::string chunk(const std::string& bytes) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx", bytes.size());
  return std::string(size) + "\r\n" + bytes + "\r\n";
}

const std::string kChunkedHead =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

// Records everything a stream reports, splitting the body into lines.
struct StreamRecorder {
  int status = 0;
  std::string contentType;
  std::vector<std::string> lines;
  std::string body;
  int dataCalls = 0;
  bool ended = false;
  std::optional<HttpsClient::Error> endError;
  LineSplitter splitter{1024};

  HttpsClient::StreamCallbacks callbacks() {
    HttpsClient::StreamCallbacks callbacks;
    callbacks.onHeaders = [this](int s, const HttpHeaders& headers) {
      status = s;
      contentType = std::string(headers.get("content-type").value_or(""));
    };
    callbacks.onData = [this](std::string_view bytes) {
      ++dataCalls;
      body.append(bytes);
      splitter.feed(bytes, [this](std::string_view line) { lines.emplace_back(line); });
    };
    callbacks.onEnd = [this](std::optional<HttpsClient::Error> error) {
      EXPECT_FALSE(ended) << "onEnd twice";
      ended = true;
      endError = std::move(error);
    };
    return callbacks;
  }
};

class HttpsClientStreamTest : public ::testing::Test {
 protected:
  boost::asio::io_context io;
  ScriptedServer server{io, std::nullopt, [](auto, const std::string&) {}};
  HttpsClient client{io, server.url()};
  StreamRecorder recorder;
};

TEST_F(HttpsClientStreamTest, ChunkedEventsSplitAcrossChunksAndSeveralPerChunk) {
  auto handle = client.stream(get("/watch"), recorder.callbacks());
  ASSERT_TRUE(runUntil(
      io, [&] { return server.accepts() == 1 && server.lastConnection()->requestCount() == 1; }));
  auto connection = server.lastConnection();
  connection->write(kChunkedHead + chunk("{\"type\":\"ADDED\"}\n{\"type\":\"MOD"));
  ASSERT_TRUE(runUntil(io, [&] { return recorder.lines.size() == 1; }));
  EXPECT_EQ(recorder.status, 200);
  EXPECT_EQ(recorder.contentType, "application/json");
  EXPECT_EQ(recorder.lines[0], "{\"type\":\"ADDED\"}");
  connection->write(chunk("IFIED\"}\n{\"type\":\"BOOKMARK\"}\n{\"type\":\"DELETED\"}\n"));
  ASSERT_TRUE(runUntil(io, [&] { return recorder.lines.size() == 4; }));
  EXPECT_EQ(recorder.lines[1], "{\"type\":\"MODIFIED\"}");
  EXPECT_EQ(recorder.lines[2], "{\"type\":\"BOOKMARK\"}");
  EXPECT_EQ(recorder.lines[3], "{\"type\":\"DELETED\"}");
  EXPECT_TRUE(handle->active());
  connection->write(chunk(""));  // the terminating zero-length chunk ("0\r\n\r\n")
  ASSERT_TRUE(runUntil(io, [&] { return recorder.ended; }));
  EXPECT_FALSE(recorder.endError);
  EXPECT_FALSE(handle->active());
}

TEST_F(HttpsClientStreamTest, ContentLengthBody) {
  server.setOnRequest([](auto connection, const std::string&) {
    connection->write("HTTP/1.1 200 OK\r\nContent-Length: 24\r\n\r\n{\"a\":1}\n{\"b\":");
    connection->write("2}\n{\"c\":3}\n");
  });
  auto handle = client.stream(get("/watch"), recorder.callbacks());
  ASSERT_TRUE(runUntil(io, [&] { return recorder.ended; }));
  EXPECT_FALSE(recorder.endError) << recorder.endError->message;
  EXPECT_EQ(recorder.lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"}));
}

TEST_F(HttpsClientStreamTest, ErrorStatusDeliversHeadersBodyAndEnd) {
  server.setOnRequest([](auto connection, const std::string&) {
    connection->write(ScriptedServer::response(403, "{\"kind\":\"Status\",\"code\":403}"));
  });
  auto handle = client.stream(get("/watch"), recorder.callbacks());
  ASSERT_TRUE(runUntil(io, [&] { return recorder.ended; }));
  EXPECT_EQ(recorder.status, 403);
  EXPECT_EQ(recorder.body, "{\"kind\":\"Status\",\"code\":403}");
  EXPECT_FALSE(recorder.endError);
}

TEST_F(HttpsClientStreamTest, ErrorStatusBodyIsBounded) {
  server.setOnRequest([](auto connection, const std::string&) {
    connection->write(ScriptedServer::response(500, std::string(10000, 'e')));
  });
  HttpsClient::StreamOptions options;
  options.maxErrorBodyBytes = 1000;
  auto handle = client.stream(get("/watch"), recorder.callbacks(), options);
  ASSERT_TRUE(runUntil(io, [&] { return recorder.ended; }));
  EXPECT_EQ(recorder.status, 500);
  ASSERT_TRUE(recorder.endError);
  EXPECT_EQ(recorder.endError->kind, Kind::TooLarge);
  EXPECT_LE(recorder.body.size(), 1000u);
}

TEST_F(HttpsClientStreamTest, CancelStopsCallbacksAndClosesTheConnection) {
  auto handle = client.stream(get("/watch"), recorder.callbacks());
  ASSERT_TRUE(runUntil(
      io, [&] { return server.accepts() == 1 && server.lastConnection()->requestCount() == 1; }));
  auto connection = server.lastConnection();
  connection->write(kChunkedHead + chunk("{\"n\":1}\n"));
  ASSERT_TRUE(runUntil(io, [&] { return recorder.lines.size() == 1; }));
  handle->cancel();
  EXPECT_FALSE(handle->active());
  connection->write(chunk("{\"n\":2}\n"));
  ASSERT_TRUE(runUntil(io, [&] { return connection->closed(); }));
  runFor(io, 20ms);
  EXPECT_EQ(recorder.lines.size(), 1u);
  EXPECT_FALSE(recorder.ended) << "cancel() is silent";
}

TEST_F(HttpsClientStreamTest, DroppingTheHandleFromACallbackCancels) {
  std::shared_ptr<HttpsClient::StreamHandle> handle;
  auto callbacks = recorder.callbacks();
  auto record = callbacks.onData;
  callbacks.onData = [&](std::string_view bytes) {
    record(bytes);
    handle.reset();
  };
  handle = client.stream(get("/watch"), callbacks);
  server.setOnRequest([](auto connection, const std::string&) {
    connection->write(kChunkedHead + chunk("{\"n\":1}\n") + chunk("{\"n\":2}\n"));
  });
  ASSERT_TRUE(
      runUntil(io, [&] { return server.accepts() == 1 && server.lastConnection()->closed(); }));
  EXPECT_EQ(recorder.dataCalls, 1);
  EXPECT_FALSE(recorder.ended);
}

TEST_F(HttpsClientStreamTest, IdleTimeoutEndsAQuietStream) {
  server.setOnRequest([](auto connection, const std::string&) {
    connection->write(kChunkedHead + chunk("{\"n\":1}\n"));
  });
  HttpsClient::StreamOptions options;
  options.idleTimeout = 200ms;
  auto handle = client.stream(get("/watch"), recorder.callbacks(), options);
  ASSERT_TRUE(runUntil(io, [&] { return recorder.lines.size() == 1; }));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(runUntil(
      io, [&] { return recorder.ended; }, 3s));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);
  ASSERT_TRUE(recorder.endError);
  EXPECT_EQ(recorder.endError->kind, Kind::Timeout);
}

TEST_F(HttpsClientStreamTest, DataKeepsTheIdleTimerAway) {
  HttpsClient::StreamOptions options;
  options.idleTimeout = 300ms;
  auto handle = client.stream(get("/watch"), recorder.callbacks(), options);
  ASSERT_TRUE(runUntil(
      io, [&] { return server.accepts() == 1 && server.lastConnection()->requestCount() == 1; }));
  auto connection = server.lastConnection();
  connection->write(kChunkedHead);
  for (int i = 0; i < 6; ++i) {
    runFor(io, 100ms);
    connection->write(chunk("{}\n"));
  }
  ASSERT_TRUE(runUntil(io, [&] { return recorder.lines.size() == 6; }));
  EXPECT_FALSE(recorder.ended);
}

TEST_F(HttpsClientStreamTest, HeaderDeadlineWhenServerNeverAnswers) {
  HttpsClient::Request request = get("/watch");
  request.deadline = 200ms;
  auto handle = client.stream(request, recorder.callbacks());
  ASSERT_TRUE(runUntil(
      io, [&] { return recorder.ended; }, 3s));
  ASSERT_TRUE(recorder.endError);
  EXPECT_EQ(recorder.endError->kind, Kind::Timeout);
  EXPECT_EQ(recorder.status, 0);
}

TEST_F(HttpsClientStreamTest, ServerClosingMidStreamIsClosedError) {
  server.setOnRequest([](auto connection, const std::string&) {
    connection->write(kChunkedHead + chunk("{\"n\":1}\n"));
    connection->closeAfterWrites();
  });
  auto handle = client.stream(get("/watch"), recorder.callbacks());
  ASSERT_TRUE(runUntil(io, [&] { return recorder.ended; }));
  ASSERT_TRUE(recorder.endError);
  EXPECT_EQ(recorder.endError->kind, Kind::Closed);
  EXPECT_EQ(recorder.lines.size(), 1u);
}

TEST_F(HttpsClientStreamTest, StreamUsesItsOwnConnection) {
  auto handle = client.stream(get("/watch"), recorder.callbacks());
  ASSERT_TRUE(runUntil(
      io, [&] { return server.accepts() == 1 && server.lastConnection()->requestCount() == 1; }));
  auto streamConnection = server.lastConnection();
  streamConnection->write(kChunkedHead);
  server.setOnRequest([](auto connection, const std::string&) {
    connection->write(ScriptedServer::response(200, "ok"));
  });
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(fetch(io, client, get("/x"))->ok());
  EXPECT_EQ(server.accepts(), 2);
  EXPECT_TRUE(handle->active());
}

TEST_F(HttpsClientStreamTest, ShutdownEndsStreamsWithCancelled) {
  auto handle = client.stream(get("/watch"), recorder.callbacks());
  ASSERT_TRUE(runUntil(
      io, [&] { return server.accepts() == 1 && server.lastConnection()->requestCount() == 1; }));
  client.shutdown();
  EXPECT_FALSE(recorder.ended);
  ASSERT_TRUE(runUntil(io, [&] { return recorder.ended; }));
  ASSERT_TRUE(recorder.endError);
  EXPECT_EQ(recorder.endError->kind, Kind::Cancelled);
}

}  // namespace
}  // namespace leasehold::net::test

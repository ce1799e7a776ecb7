// The local HTTP request parser, fuzzed the way requests really arrive: one net::HttpServer
// (default Options, as the status server uses them) listens on loopback inside the fuzzer
// process with the status API's routes, and each input is written as-is to a fresh connection.
// The client then half-closes, and the io_context runs (bounded) until the server has answered
// and closed the connection.
//
// Properties: every connection ends (the server neither hangs on nor leaks a connection whose
// client has gone); whatever the server sends starts with an HTTP/1.1 status line; handlers only
// see paths without the query.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "FuzzCheck.h"
#include "net/HttpServer.h"

using namespace leasehold;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kDeadline = std::chrono::seconds(10);
constexpr std::size_t kMaxResponseBytes = 4 * 1024 * 1024;

net::ServerResponse leaderResponse(const net::ServerRequest& request) {
  FUZZ_CHECK(request.path == "/leader", "a handler got another path: " + request.path);
  FUZZ_CHECK(request.path.find('?') == std::string::npos, "path with query: " + request.path);
  net::ServerResponse response;
  response.contentType = "application/json";
  response.body = "{\"leader\":true,\"bodyBytes\":" + std::to_string(request.body.size()) + "}";
  response.headers.emplace_back("Cache-Control", "no-store");
  return response;
}

struct Harness {
  asio::io_context io;
  net::HttpServer server{io, net::HttpServer::Options{}};
  tcp::endpoint endpoint;

  Harness() {
    server.route("GET", "/leader", leaderResponse);
    server.route("POST", "/leader", leaderResponse);
    server.routeEvents("/leader/watch", [](std::shared_ptr<net::EventStream> client) {
      client->send("{\"leader\":true}");
    });
    if (const auto error = server.listen()) {
      fuzz::propertyFailed(__FILE__, __LINE__, "listen", *error);
    }
    endpoint = tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port());
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Harness* harness = new Harness;  // lives for the whole process, like the sidecar's
  auto& io = harness->io;

  // Everything asynchronous on the one io_context: a blocking connect() could be interrupted by
  // libFuzzer's timer signal (EINTR).
  tcp::socket client(io);
  const std::string request(reinterpret_cast<const char*>(data), size);
  std::string response;
  bool readDone = false;
  client.async_connect(harness->endpoint, [&](const boost::system::error_code& connectError) {
    FUZZ_CHECK(!connectError, "connect: " + connectError.message());
    // Close with a reset at the end: thousands of connections a second must not pile up in
    // TIME_WAIT.
    boost::system::error_code ignored;
    client.set_option(asio::socket_base::linger(true, 0), ignored);
    asio::async_write(client, asio::buffer(request),
                      [&](const boost::system::error_code& writeError, std::size_t) {
                        // The server may already have answered and closed (400, 431, 413).
                        boost::system::error_code shutdownError;
                        if (!writeError) client.shutdown(tcp::socket::shutdown_send, shutdownError);
                      });
    asio::async_read(client, asio::dynamic_buffer(response, kMaxResponseBytes),
                     [&](const boost::system::error_code&, std::size_t) { readDone = true; });
  });

  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (!readDone || harness->server.connectionCount() != 0) {
    FUZZ_CHECK(std::chrono::steady_clock::now() < deadline,
               std::string(readDone ? "the server did not release the connection"
                                    : "the server neither answered nor closed") +
                   " within 10 s; received so far:\n" + response);
    io.run_one_for(std::chrono::milliseconds(10));
  }
  boost::system::error_code ignored;
  client.close(ignored);

  if (!response.empty()) {
    FUZZ_CHECK(std::string_view(response).starts_with("HTTP/1.1 "),
               "not an HTTP/1.1 response:\n" + response);
  }
  return 0;
}

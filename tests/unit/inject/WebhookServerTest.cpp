// The webhook's HTTPS server on a real loopback socket with real TLS (TestCertificates, the
// openssl tool), the sidecar's own HTTPS client on the other end: routes, limits, a certificate
// replaced while serving, a graceful stop.
#include "inject/WebhookServer.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <optional>

#include "EventLoop.h"
#include "TestCertificates.h"
#include "net/HttpsClient.h"

namespace leasehold::inject {
namespace {

using net::HttpsClient;
using net::test::runUntil;
using net::test::TestCertificates;

struct Served {
  boost::asio::io_context io;
  std::unique_ptr<WebhookServer> server;

  explicit Served(WebhookServer::Options options = {}) {
    options.address = "127.0.0.1";
    options.port = 0;
    server = std::make_unique<WebhookServer>(io, options);
    const auto& certs = TestCertificates::get();
    EXPECT_EQ(server->useCertificate(certs.server.certPem, certs.server.keyPem), std::nullopt);
    server->route("GET", "/healthz", [](const net::ServerRequest&) {
      net::ServerResponse r;
      r.body = "ok\n";
      return r;
    });
    server->route("POST", "/mutate", [](const net::ServerRequest& request) {
      net::ServerResponse r;
      r.contentType = "application/json";
      r.body = "{\"got\":" + std::to_string(request.body.size()) + "}";
      return r;
    });
    EXPECT_EQ(server->listen(), std::nullopt);
  }

  HttpsClient::Result call(const std::string& method, const std::string& path,
                           std::string body = "", const std::string& caPem = "") {
    net::TlsOptions tls;
    tls.caPem = caPem.empty() ? TestCertificates::get().caPem : caPem;
    HttpsClient client(io, "https://127.0.0.1:" + std::to_string(server->port()), tls);
    std::optional<HttpsClient::Result> result;
    HttpsClient::Request request;
    request.method = method;
    request.target = path;
    request.body = std::move(body);
    client.request(request, [&](HttpsClient::Result r) { result = std::move(r); });
    EXPECT_TRUE(runUntil(io, [&] { return result.has_value(); }));
    return result.value_or(
        HttpsClient::Result(HttpsClient::Error{HttpsClient::Error::Kind::Timeout, "no answer"}));
  }
};

TEST(WebhookServer, ServesTheRoutesOverTls) {
  Served s;
  struct Case {
    std::string method, path;
    int status;
    std::string body;
  };
  for (const Case& c : std::vector<Case>{{"GET", "/healthz", 200, "ok\n"},
                                         {"POST", "/mutate", 200, "{\"got\":0}"},
                                         {"GET", "/mutate", 405, "Method Not Allowed\n"},
                                         {"GET", "/nothing", 404, "Not Found\n"}}) {
    const auto result = s.call(c.method, c.path);
    ASSERT_TRUE(result.ok()) << c.path << ": " << result.error().message;
    EXPECT_EQ(result.response().status, c.status) << c.method << " " << c.path;
    EXPECT_EQ(result.response().body, c.body) << c.method << " " << c.path;
  }
}

TEST(WebhookServer, RefusesABodyOverTheLimit) {
  WebhookServer::Options options;
  options.maxBodyBytes = 1000;
  Served s(options);
  const auto fits = s.call("POST", "/mutate", std::string(1000, 'x'));
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(fits.response().body, "{\"got\":1000}");
  const auto huge = s.call("POST", "/mutate", std::string(1001, 'x'));
  ASSERT_TRUE(huge.ok()) << huge.error().message;
  EXPECT_EQ(huge.response().status, 413);
}

TEST(WebhookServer, ServesANewCertificateToTheNextConnection) {
  Served s;
  const auto& certs = TestCertificates::get();
  // A key that is not the certificate's is refused, and the old pair stays.
  EXPECT_EQ(s.server->useCertificate(certs.server.certPem, certs.client.keyPem),
            "the key does not match the certificate");
  EXPECT_TRUE(s.call("GET", "/healthz").ok());
  // The named certificate (SAN kube.internal only) does not cover 127.0.0.1: the client's
  // verification failing shows the server now hands it out.
  ASSERT_EQ(s.server->useCertificate(certs.serverNamed.certPem, certs.serverNamed.keyPem),
            std::nullopt);
  const auto result = s.call("GET", "/healthz");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, HttpsClient::Error::Kind::Tls) << result.error().message;
}

TEST(WebhookServer, NeedsACertificateToListen) {
  boost::asio::io_context io;
  WebhookServer server(io, {});
  EXPECT_EQ(server.listen(), "no certificate to serve with");
  EXPECT_EQ(server.useCertificate("not a certificate", "nor a key")
                .value_or("")
                .rfind("cannot load the key", 0),
            0u);
  const auto& certs = TestCertificates::get();
  EXPECT_EQ(server.useCertificate("not a certificate", certs.server.keyPem)
                .value_or("")
                .rfind("cannot load the certificate", 0),
            0u);
  EXPECT_EQ(server.listen(), "no certificate to serve with");
}

TEST(WebhookServer, StopLetsTheLoopRunOut) {
  Served s;
  ASSERT_TRUE(s.call("GET", "/healthz").ok());
  s.server->stop();
  s.io.restart();
  EXPECT_TRUE(runUntil(s.io, [&] { return s.io.stopped() || s.server->connectionCount() == 0; }));
  const auto after = s.call("GET", "/healthz");
  EXPECT_FALSE(after.ok());
}

}  // namespace
}  // namespace leasehold::inject

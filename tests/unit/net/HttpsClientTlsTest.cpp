// TLS against a real OpenSSL server: chain and hostname verification, SNI, client certificates.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/post.hpp>

#include "Fetch.h"
#include "ScriptedServer.h"
#include "TestCertificates.h"
#include "net/WorkerHostResolver.h"
#include "runtime/BlockingWorker.h"

namespace leasehold::net::test {
namespace {

using Kind = HttpsClient::Error::Kind;
using ::testing::HasSubstr;

class HttpsClientTlsTest : public ::testing::Test {
 protected:
  const TestCertificates& certs = TestCertificates::get();
  boost::asio::io_context io;

  std::unique_ptr<ScriptedServer> serve(const KeyPair& serverCert, std::string clientCa = "") {
    return std::make_unique<ScriptedServer>(
        io, ScriptedServer::Tls{serverCert.certPem, serverCert.keyPem, std::move(clientCa)},
        [](std::shared_ptr<ScriptedConnection> connection, const std::string&) {
          connection->write(ScriptedServer::response(200, "hello"));
        });
  }
  TlsOptions trusting(const std::string& caPem) {
    TlsOptions tls;
    tls.caPem = caPem;
    return tls;
  }
};

TEST_F(HttpsClientTlsTest, VerifiesIpSanAgainstTheGivenCa) {
  auto server = serve(certs.server);
  HttpsClient client(io, server->url(), trusting(certs.caPem));
  ASSERT_FALSE(client.configurationError()) << *client.configurationError();
  auto result = fetch(io, client, get("/x"));
  ASSERT_TRUE(result);
  ASSERT_TRUE(result->ok()) << result->error().message;
  EXPECT_EQ(result->response().status, 200);
  EXPECT_EQ(result->response().body, "hello");
  EXPECT_EQ(server->lastConnection()->sni(), "") << "no SNI for IP literals";
}

TEST_F(HttpsClientTlsTest, VerifiesDnsNameAndSendsSni) {
  auto server = serve(certs.server);
  runtime::BlockingWorker worker([this](auto f) { boost::asio::post(io, std::move(f)); });
  WorkerHostResolver resolver(worker);  // the name is looked up (HttpsClientResolveTest)
  HttpsClient::Options options;
  options.resolver = &resolver;
  HttpsClient client(io, "https://localhost:" + std::to_string(server->port()),
                     trusting(certs.caPem), options);
  auto result = fetch(io, client, get("/x"));
  ASSERT_TRUE(result);
  ASSERT_TRUE(result->ok()) << result->error().message;
  EXPECT_EQ(server->lastConnection()->sni(), "localhost");
}

// A certificate the client cannot verify: the handshake fails, with the reason in the message.
struct RefusalCase {
  const char* name;
  KeyPair TestCertificates::*serverCert;
  std::string TestCertificates::*trustedCa;
  std::string serverName;  // TlsOptions::serverName ("" = the URL's host)
  const char* messageHas;
};

void PrintTo(const RefusalCase& c, std::ostream* os) {
  *os << c.name;
}

class HttpsClientTlsRefusalTest : public HttpsClientTlsTest,
                                  public ::testing::WithParamInterface<RefusalCase> {};

TEST_P(HttpsClientTlsRefusalTest, FailsTheHandshake) {
  const RefusalCase& c = GetParam();
  auto server = serve(certs.*c.serverCert);
  TlsOptions tls = trusting(certs.*c.trustedCa);
  tls.serverName = c.serverName;
  HttpsClient client(io, server->url(), tls);
  auto result = fetch(io, client, get("/x"));
  ASSERT_TRUE(failedWith(result, Kind::Tls));
  EXPECT_THAT(result->error().message, HasSubstr(c.messageHas));
}

INSTANTIATE_TEST_SUITE_P(
    Table, HttpsClientTlsRefusalTest,
    ::testing::Values(RefusalCase{"wrong_ca", &TestCertificates::server,
                                  &TestCertificates::otherCaPem, "", "verif"},
                      // serverNamed has only DNS:kube.internal, not the URL's IP.
                      RefusalCase{"hostname_mismatch", &TestCertificates::serverNamed,
                                  &TestCertificates::caPem, "", "mismatch"},
                      RefusalCase{"dns_name_mismatch", &TestCertificates::server,
                                  &TestCertificates::caPem, "wrong.example", ""}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(HttpsClientTlsTest, ServerNameOverrideVerifiesAndSetsSni) {
  auto server = serve(certs.serverNamed);
  TlsOptions tls = trusting(certs.caPem);
  tls.serverName = "kube.internal";
  HttpsClient client(io, server->url(), tls);
  auto result = fetch(io, client, get("/x"));
  ASSERT_TRUE(result);
  ASSERT_TRUE(result->ok()) << result->error().message;
  EXPECT_EQ(server->lastConnection()->sni(), "kube.internal");
}

TEST_F(HttpsClientTlsTest, InsecureSkipVerifyAcceptsAnyCertificate) {
  auto server = serve(certs.serverNamed);
  TlsOptions tls;
  tls.insecureSkipVerify = true;
  HttpsClient client(io, server->url(), tls);
  auto result = fetch(io, client, get("/x"));
  ASSERT_TRUE(result);
  EXPECT_TRUE(result->ok()) << result->error().message;
}

TEST_F(HttpsClientTlsTest, CaWithInsecureIsAConfigurationError) {
  TlsOptions tls = trusting(certs.caPem);
  tls.insecureSkipVerify = true;
  HttpsClient client(io, "https://127.0.0.1:1", tls);
  ASSERT_TRUE(client.configurationError());
  EXPECT_TRUE(failedWith(fetch(io, client, get("/x")), Kind::Tls));
}

TEST_F(HttpsClientTlsTest, PresentsClientCertificate) {
  auto server = serve(certs.server, certs.caPem);
  TlsOptions tls = trusting(certs.caPem);
  tls.clientCertPem = certs.client.certPem;
  tls.clientKeyPem = certs.client.keyPem;
  HttpsClient client(io, server->url(), tls);
  auto result = fetch(io, client, get("/x"));
  ASSERT_TRUE(result);
  ASSERT_TRUE(result->ok()) << result->error().message;
  EXPECT_NE(server->lastConnection()->clientCertificateSubject().find("CN=client"),
            std::string::npos)
      << server->lastConnection()->clientCertificateSubject();
}

TEST_F(HttpsClientTlsTest, FailsWithoutRequiredClientCertificate) {
  auto server = serve(certs.server, certs.caPem);
  HttpsClient client(io, server->url(), trusting(certs.caPem));
  auto result = fetch(io, client, get("/x"));
  ASSERT_TRUE(result);
  ASSERT_FALSE(result->ok());
  // TLS 1.3 reports the server's rejection after the client's handshake finished.
  EXPECT_TRUE(result->error().kind == Kind::Tls || result->error().kind == Kind::Closed)
      << HttpsClient::kindName(result->error().kind) << ": " << result->error().message;
}

TEST_F(HttpsClientTlsTest, MismatchedClientKeyIsRejected) {
  TlsOptions tls = trusting(certs.caPem);
  tls.clientCertPem = certs.client.certPem;
  tls.clientKeyPem = certs.server.keyPem;
  HttpsClient client(io, "https://127.0.0.1:1", tls);
  ASSERT_TRUE(client.configurationError());
}

TEST_F(HttpsClientTlsTest, SetTlsAppliesToTheNextConnection) {
  auto server = serve(certs.server);
  HttpsClient client(io, server->url(), trusting(certs.otherCaPem));
  auto first = fetch(io, client, get("/x"));
  ASSERT_TRUE(first);
  EXPECT_FALSE(first->ok());
  EXPECT_FALSE(client.setTls(trusting(certs.caPem)));
  auto second = fetch(io, client, get("/x"));
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->ok()) << second->error().message;
  // Garbage is rejected and the working material stays.
  EXPECT_TRUE(client.setTls(trusting("not a certificate")));
  client.closeIdle();
  auto third = fetch(io, client, get("/x"));
  ASSERT_TRUE(third);
  EXPECT_TRUE(third->ok()) << third->error().message;
}

TEST_F(HttpsClientTlsTest, KeepAliveOverTlsUsesOneConnection) {
  auto server = serve(certs.server);
  HttpsClient client(io, server->url(), trusting(certs.caPem));
  for (int i = 0; i < 3; ++i) {
    auto result = fetch(io, client, get("/x"));
    ASSERT_TRUE(result && result->ok());
  }
  EXPECT_EQ(server->accepts(), 1);
}

}  // namespace
}  // namespace leasehold::net::test

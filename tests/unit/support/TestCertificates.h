#pragma once
// Certificates made once per test run with the openssl command line tool, so that the tests run
// real TLS with real verification: two CAs, server certificates with and without IP SANs, and a
// client certificate.
#include <string>

namespace leasehold::net::test {

struct KeyPair {
  std::string certPem;
  std::string keyPem;
};

struct TestCertificates {
  std::string caPem;       // signs everything below
  std::string otherCaPem;  // unrelated CA: verification against it must fail
  KeyPair server;          // SAN DNS:localhost, IP:127.0.0.1
  KeyPair serverNamed;     // SAN DNS:kube.internal only
  KeyPair client;          // clientAuth, CN=leasehold-client

  // Generated on first use; aborts the test run (ADD_FAILURE + empty strings) if openssl fails.
  static const TestCertificates& get();
};

}  // namespace leasehold::net::test

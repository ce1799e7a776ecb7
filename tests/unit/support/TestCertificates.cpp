#include "TestCertificates.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace leasehold::net::test {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

void writeFile(const fs::path& path, const std::string& content) {
  std::ofstream(path) << content;
}

bool run(const fs::path& dir, const std::string& command) {
  const std::string full = "cd '" + dir.string() + "' && " + command + " >>openssl.log 2>&1";
  return std::system(full.c_str()) == 0;
}

class CertificateDirectory {
 public:
  CertificateDirectory() {
    char pattern[] = "/tmp/leasehold-net-test-XXXXXX";
    if (mkdtemp(pattern)) dir_ = pattern;
  }
  ~CertificateDirectory() {
    std::error_code ignored;
    if (!dir_.empty()) fs::remove_all(dir_, ignored);
  }
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
};

TestCertificates generate(const fs::path& dir) {
  writeFile(dir / "openssl.cnf",
            "[req]\n"
            "distinguished_name = dn\n"
            "prompt = no\n"
            "[dn]\n"
            "CN = unused\n"
            "[ca]\n"
            "basicConstraints = critical,CA:TRUE\n"
            "keyUsage = critical,keyCertSign,cRLSign\n"
            "subjectKeyIdentifier = hash\n"
            "[server]\n"
            "basicConstraints = CA:FALSE\n"
            "extendedKeyUsage = serverAuth\n"
            "subjectAltName = DNS:localhost,IP:127.0.0.1\n"
            "[named]\n"
            "basicConstraints = CA:FALSE\n"
            "extendedKeyUsage = serverAuth\n"
            "subjectAltName = DNS:kube.internal\n"
            "[client]\n"
            "basicConstraints = CA:FALSE\n"
            "extendedKeyUsage = clientAuth\n");
  const std::string newKey = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  auto makeCa = [&](const std::string& name) {
    return run(dir, "openssl req -x509 " + newKey + " -config openssl.cnf -extensions ca -days 2" +
                        " -subj '/CN=" + name + "' -keyout " + name + ".key -out " + name + ".pem");
  };
  auto makeLeaf = [&](const std::string& name, const std::string& section, int serial) {
    return run(dir, "openssl req -new " + newKey + " -config openssl.cnf -subj '/CN=" + name +
                        "' -keyout " + name + ".key -out " + name + ".csr") &&
           run(dir, "openssl x509 -req -in " + name + ".csr -CA ca.pem -CAkey ca.key -set_serial " +
                        std::to_string(serial) + " -days 2 -extfile openssl.cnf -extensions " +
                        section + " -out " + name + ".pem");
  };
  const bool ok = makeCa("ca") && makeCa("otherca") && makeLeaf("server", "server", 1001) &&
                  makeLeaf("named", "named", 1002) && makeLeaf("client", "client", 1003);
  if (!ok) {
    ADD_FAILURE() << "openssl failed:\n" << readFile(dir / "openssl.log");
    return {};
  }
  TestCertificates certs;
  certs.caPem = readFile(dir / "ca.pem");
  certs.otherCaPem = readFile(dir / "otherca.pem");
  certs.server = {readFile(dir / "server.pem"), readFile(dir / "server.key")};
  certs.serverNamed = {readFile(dir / "named.pem"), readFile(dir / "named.key")};
  certs.client = {readFile(dir / "client.pem"), readFile(dir / "client.key")};
  return certs;
}

}  // namespace

const TestCertificates& TestCertificates::get() {
  static const TestCertificates certificates = [] {
    CertificateDirectory dir;
    return generate(dir.path());
  }();
  return certificates;
}

}  // namespace leasehold::net::test

// `leasehold inject`'s command line: --help, and each usage error or failed start named on one
// line with exit status 2, before anything listens.
#include "inject/InjectCommand.h"

#include <gtest/gtest.h>

#include <sstream>

#include "TemporaryDirectory.h"

namespace leasehold::inject {
namespace {

TEST(InjectCommand, IsInvokedByItsName) {
  const char* inject[] = {"leasehold", "inject", "--help"};
  const char* sidecar[] = {"leasehold", "--lease-name=x"};
  EXPECT_TRUE(InjectCommand::invoked(3, inject));
  EXPECT_FALSE(InjectCommand::invoked(2, sidecar));
  EXPECT_FALSE(InjectCommand::invoked(1, inject));
}

TEST(InjectCommand, PrintsHelp) {
  for (const char* flag : {"--help", "-h"}) {
    std::ostringstream out, err;
    EXPECT_EQ(InjectCommand::run({"--listen=1.2.3.4:1", flag}, out, err), 0);
    EXPECT_EQ(out.str().rfind("Usage: leasehold inject --tls-cert-file FILE", 0), 0u);
    EXPECT_NE(out.str().find("Exit status: 0 after a signal, 2 a usage error or a failed start."),
              std::string::npos);
    EXPECT_EQ(err.str(), "");
  }
}

TEST(InjectCommand, RefusesBadUsageNamingTheFlag) {
  testing_support::TemporaryDirectory dir;
  const std::string cert = "--tls-cert-file=" + (dir.path() / "none.crt").string();
  const std::string key = "--tls-key-file=" + (dir.path() / "none.key").string();
  const std::string params = "--params-dir=" + dir.path().string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{key, params}, "leasehold inject: --tls-cert-file is required"},
      {{cert, key}, "leasehold inject: --params-dir is required"},
      {{cert, key, params, "--port=1"}, "leasehold inject: unknown option --port=1"},
      {{cert, key, params, "extra"}, "leasehold inject: unexpected argument extra"},
      {{cert, key, "--params-dir"}, "leasehold inject: --params-dir needs a value"},
      {{cert, key, params, "--listen="}, "leasehold inject: --listen must not be empty"},
      {{cert, key, params, "--log-format", "xml"},
       "leasehold inject: --log-format: \"xml\" is not text or json"},
      {{cert, key, params, "--log-level=loud"},
       "leasehold inject: --log-level: \"loud\" is not debug, info, warn or error"},
      {{cert, key, params, "--listen=nowhere"}, "leasehold inject: --listen: "},
      {{cert, key, params},
       "leasehold inject: no serving certificate (--tls-cert-file, --tls-key-file): cannot read " +
           (dir.path() / "none.crt").string()},
      {{"--tls-cert-file=" + dir.write("bad.crt", "not a certificate").string(),
        "--tls-key-file=" + dir.write("bad.key", "not a key").string(), params},
       "leasehold inject: no serving certificate (--tls-cert-file, --tls-key-file): cannot load "
       "the key"},
  };
  for (const auto& [args, message] : cases) {
    std::ostringstream out, err;
    EXPECT_EQ(InjectCommand::run(args, out, err), 2) << message;
    EXPECT_EQ(err.str().rfind(message, 0), 0u) << err.str();
    EXPECT_EQ(out.str(), "");
  }
}

}  // namespace
}  // namespace leasehold::inject

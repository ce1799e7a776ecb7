#include "cluster/ExecCredential.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace leasehold::cluster {
namespace {

using namespace std::chrono;
using testing::HasSubstr;
using testing::Not;

constexpr const char* kV1 = "client.authentication.k8s.io/v1";

LoadResult<ExecCredential> parse(const std::string& json, const char* version = kV1) {
  return ExecCredential::parse(json, version, "exec plugin \"p\"");
}

TEST(ExecCredential, TokenWithExpiry) {
  const auto c = parse(R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
      "spec":{},"status":{"token":"abc","expirationTimestamp":"2026-11-30T10:00:00Z"}})");
  ASSERT_TRUE(c) << c.message();
  EXPECT_EQ(c->token, "abc");
  ASSERT_TRUE(c->expiration);
  EXPECT_EQ(*c->expiration, sys_days(2026y / November / 30) + 10h);
  EXPECT_TRUE(c->clientCertificatePem.empty());
}

TEST(ExecCredential, ClientCertificateWithoutExpiry) {
  const auto c =
      parse(R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1",
      "status":{"clientCertificateData":"CERT","clientKeyData":"KEY"}})",
            "client.authentication.k8s.io/v1beta1");
  ASSERT_TRUE(c) << c.message();
  EXPECT_FALSE(c->token);
  EXPECT_EQ(c->clientCertificatePem, "CERT");
  EXPECT_EQ(c->clientKeyPem, "KEY");
  EXPECT_FALSE(c->expiration);
}

struct BadCredential {
  const char* json;
  const char* mentions;
};

class ExecCredentialBad : public testing::TestWithParam<BadCredential> {};

TEST_P(ExecCredentialBad, IsRejectedWithoutQuotingSecrets) {
  const auto c = parse(GetParam().json);
  ASSERT_FALSE(c) << GetParam().json;
  EXPECT_THAT(c.message(), HasSubstr("exec plugin \"p\": "));
  EXPECT_THAT(c.message(), HasSubstr(GetParam().mentions));
  EXPECT_THAT(c.message(), Not(HasSubstr("SECRET")));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ExecCredentialBad,
    testing::Values(
        BadCredential{"not json SECRET", "not valid JSON"},
        BadCredential{R"({"status":{"token":"SECRET"})", "not valid JSON"},
        BadCredential{R"(["SECRET"])", "not a JSON object"},
        BadCredential{R"({"kind":"Other","apiVersion":"client.authentication.k8s.io/v1",
                         "status":{"token":"SECRET"}})",
                      "kind: expected \"ExecCredential\""},
        BadCredential{
            R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1",
                         "status":{"token":"SECRET"}})",
            "apiVersion: expected \"client.authentication.k8s.io/v1\""},
        BadCredential{R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1"})",
                      "status: missing"},
        BadCredential{R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
                         "status":"SECRET"})",
                      "status: expected an object"},
        BadCredential{R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
                         "status":{}})",
                      "neither token nor clientCertificateData"},
        BadCredential{R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
                         "status":{"token":42}})",
                      "status.token: expected a string, got number"},
        BadCredential{R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
                         "status":{"clientCertificateData":"SECRET"}})",
                      "must be given together"},
        BadCredential{R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
                         "status":{"token":"SECRET","expirationTimestamp":"tomorrow"}})",
                      "status.expirationTimestamp: \"tomorrow\" is not an RFC 3339 time"}));

struct Rfc3339Case {
  const char* text;
  bool valid;
  sys_time<microseconds> expected;
};

class Rfc3339 : public testing::TestWithParam<Rfc3339Case> {};

TEST_P(Rfc3339, Parses) {
  const auto parsed = ExecCredential::parseRfc3339(GetParam().text);
  ASSERT_EQ(parsed.has_value(), GetParam().valid) << GetParam().text;
  if (parsed) {
    EXPECT_EQ(*parsed, GetParam().expected) << GetParam().text;
  }
}

const sys_time<microseconds> kNoon = sys_days(2026y / November / 30) + 12h;

INSTANTIATE_TEST_SUITE_P(Table, Rfc3339,
                         testing::Values(Rfc3339Case{"2026-11-30T12:00:00Z", true, kNoon},
                                         Rfc3339Case{"2026-11-30t12:00:00z", true, kNoon},
                                         Rfc3339Case{"2026-11-30T12:00:00.5Z", true, kNoon + 500ms},
                                         Rfc3339Case{"2026-11-30T12:00:00.123456789Z", true,
                                                     kNoon + 123456us},
                                         Rfc3339Case{"2026-11-30T13:30:00+01:30", true, kNoon},
                                         Rfc3339Case{"2026-11-30T10:00:00-02:00", true, kNoon},
                                         Rfc3339Case{"2026-11-30T12:00:00", false, {}},
                                         Rfc3339Case{"2026-11-30 12:00:00Z", false, {}},
                                         Rfc3339Case{"2026-02-30T12:00:00Z", false, {}},
                                         Rfc3339Case{"2026-11-30T24:00:00Z", false, {}},
                                         Rfc3339Case{"2026-11-30T12:00:00.Z", false, {}},
                                         Rfc3339Case{"2026-11-30T12:00:00+0100", false, {}},
                                         Rfc3339Case{"2026-11-30T12:00:00Zjunk", false, {}},
                                         Rfc3339Case{"", false, {}}));

}  // namespace
}  // namespace leasehold::cluster

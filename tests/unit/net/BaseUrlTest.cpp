#include "net/BaseUrl.h"

#include <gtest/gtest.h>

namespace leasehold::net {
namespace {

TEST(BaseUrlTest, HttpsWithPort) {
  std::string error;
  auto url = BaseUrl::parse("https://10.96.0.1:6443", &error);
  ASSERT_TRUE(url) << error;
  EXPECT_TRUE(url->tls);
  EXPECT_EQ(url->host, "10.96.0.1");
  EXPECT_EQ(url->port, 6443);
  EXPECT_TRUE(url->hostIsIpLiteral);
  EXPECT_EQ(url->hostHeader, "10.96.0.1:6443");
  EXPECT_EQ(url->pathPrefix, "");
}

TEST(BaseUrlTest, Ipv6InBracketsAndDefaultPort) {
  auto url = BaseUrl::parse("https://[fd00::1]", nullptr);
  ASSERT_TRUE(url);
  EXPECT_EQ(url->host, "fd00::1");
  EXPECT_EQ(url->port, 443);
  EXPECT_TRUE(url->hostIsIpLiteral);
  EXPECT_EQ(url->hostHeader, "[fd00::1]");
  auto withPort = BaseUrl::parse("https://[::1]:6443/", nullptr);
  ASSERT_TRUE(withPort);
  EXPECT_EQ(withPort->port, 6443);
  EXPECT_EQ(withPort->hostHeader, "[::1]:6443");
}

TEST(BaseUrlTest, DnsNameHttpAndPrefix) {
  auto url = BaseUrl::parse("http://api.example.com/k8s/clusters/c-1/", nullptr);
  ASSERT_TRUE(url);
  EXPECT_FALSE(url->tls);
  EXPECT_EQ(url->port, 80);
  EXPECT_FALSE(url->hostIsIpLiteral);
  EXPECT_EQ(url->hostHeader, "api.example.com");
  EXPECT_EQ(url->pathPrefix, "/k8s/clusters/c-1");
}

TEST(BaseUrlTest, Rejects) {
  for (const char* bad :
       {"ftp://x", "https://", "https://host:0", "https://host:99999", "https://host:12x",
        "https://[::1", "https://[nothex]:1", "https://u:p@host", "https://host/a?b", "host:443"}) {
    std::string error;
    EXPECT_FALSE(BaseUrl::parse(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

}  // namespace
}  // namespace leasehold::net

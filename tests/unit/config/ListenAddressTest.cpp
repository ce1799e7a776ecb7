#include "config/ListenAddress.h"

#include <gtest/gtest.h>

namespace leasehold::config {
namespace {

struct AddressCase {
  const char* text;
  const char* host;  // nullptr: rejected
  int port;
};

class ListenAddressTable : public testing::TestWithParam<AddressCase> {};

TEST_P(ListenAddressTable, ParsesOrRejects) {
  const auto& c = GetParam();
  const auto result = ListenAddress::parse(c.text);
  if (c.host == nullptr) {
    ASSERT_TRUE(std::holds_alternative<ConfigError>(result)) << c.text;
    EXPECT_NE(std::get<ConfigError>(result).message.find(c.text), std::string::npos);
    return;
  }
  ASSERT_TRUE(std::holds_alternative<ListenAddress>(result))
      << c.text << ": " << std::get<ConfigError>(result).message;
  EXPECT_EQ(std::get<ListenAddress>(result).host, c.host);
  EXPECT_EQ(std::get<ListenAddress>(result).port, c.port);
  EXPECT_EQ(std::get<ListenAddress>(result).toString(), c.text);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ListenAddressTable,
    testing::Values(AddressCase{"127.0.0.1:4040", "127.0.0.1", 4040},
                    AddressCase{"0.0.0.0:9102", "0.0.0.0", 9102},
                    AddressCase{"[::1]:4040", "::1", 4040}, AddressCase{"[::]:65535", "::", 65535},
                    AddressCase{"[fd00::1:2]:80", "fd00::1:2", 80},
                    AddressCase{"::1:4040", nullptr, 0}, AddressCase{"127.0.0.1", nullptr, 0},
                    AddressCase{":4040", nullptr, 0}, AddressCase{"host:0", nullptr, 0},
                    AddressCase{"host:65536", nullptr, 0}, AddressCase{"host:http", nullptr, 0},
                    AddressCase{"[::1]4040", nullptr, 0}, AddressCase{"[nothex]:1", nullptr, 0},
                    AddressCase{"[::1:1", nullptr, 0}, AddressCase{"a b:1", nullptr, 0},
                    AddressCase{"", nullptr, 0}));

// The server binds addresses, not names: contrib leader-elector's manifests have
// --http=localhost:4040, which has to start.
TEST(ListenAddressTest, LocalhostIsTheIpv4Loopback) {
  for (const char* text : {"localhost:1", "LocalHost:1"}) {
    const auto result = ListenAddress::parse(text);
    ASSERT_TRUE(std::holds_alternative<ListenAddress>(result)) << text;
    EXPECT_EQ(std::get<ListenAddress>(result), (ListenAddress{"127.0.0.1", 1})) << text;
  }
}

}  // namespace
}  // namespace leasehold::config

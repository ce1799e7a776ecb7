#include "net/Base64.h"

#include <gtest/gtest.h>

namespace leasehold::net {
namespace {

TEST(Base64, RoundTrips) {
  for (const std::string text : {"", "a", "ab", "abc", "abcd", "hello world\n", "\x00\xff\x10"}) {
    const auto encoded = Base64::encode(text);
    const auto decoded = Base64::decode(encoded);
    ASSERT_TRUE(decoded) << encoded;
    EXPECT_EQ(*decoded, text);
  }
  EXPECT_EQ(Base64::encode("hello"), "aGVsbG8=");
}

TEST(Base64, ToleratesLineBreaksAndMissingPadding) {
  EXPECT_EQ(Base64::decode("aGVs\nbG8=\n"), "hello");
  EXPECT_EQ(Base64::decode("aGVsbG8"), "hello");
}

TEST(Base64, RejectsGarbage) {
  for (const char* bad : {"aGVsbG8=x", "a", "aGV*", "aGVsbG8===", "a b", "aGVsbG8=="}) {
    EXPECT_FALSE(Base64::decode(bad)) << bad;
  }
}

}  // namespace
}  // namespace leasehold::net

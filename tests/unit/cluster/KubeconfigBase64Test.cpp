#include "cluster/KubeconfigBase64.h"

#include <gtest/gtest.h>

namespace leasehold::cluster {
namespace {

TEST(KubeconfigBase64, RoundTrips) {
  for (const std::string text : {"", "a", "ab", "abc", "abcd", "hello world\n", "\x00\xff\x10"}) {
    const auto encoded = KubeconfigBase64::encode(text);
    const auto decoded = KubeconfigBase64::decode(encoded);
    ASSERT_TRUE(decoded) << encoded;
    EXPECT_EQ(*decoded, text);
  }
  EXPECT_EQ(KubeconfigBase64::encode("hello"), "aGVsbG8=");
}

TEST(KubeconfigBase64, ToleratesLineBreaksAndMissingPadding) {
  EXPECT_EQ(KubeconfigBase64::decode("aGVs\nbG8=\n"), "hello");
  EXPECT_EQ(KubeconfigBase64::decode("aGVsbG8"), "hello");
}

TEST(KubeconfigBase64, RejectsGarbage) {
  for (const char* bad : {"aGVsbG8=x", "a", "aGV*", "aGVsbG8===", "a b", "aGVsbG8=="}) {
    EXPECT_FALSE(KubeconfigBase64::decode(bad)) << bad;
  }
}

}  // namespace
}  // namespace leasehold::cluster

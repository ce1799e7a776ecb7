#include "config/KubernetesNameRules.h"

#include <gtest/gtest.h>

#include <string>

namespace leasehold::config {
namespace {

TEST(KubernetesNameRules, Subdomain) {
  for (const char* good : {"a", "my-app", "my.app", "a1.b2-c3", "0abc"}) {
    EXPECT_FALSE(KubernetesNameRules::dns1123Subdomain(good)) << good;
  }
  for (const char* bad : {"", "My-app", "-a", "a-", "a..b", ".a", "a.", "a_b", "a.-b"}) {
    EXPECT_TRUE(KubernetesNameRules::dns1123Subdomain(bad)) << bad;
  }
  EXPECT_FALSE(KubernetesNameRules::dns1123Subdomain(std::string(253, 'a')));
  EXPECT_TRUE(KubernetesNameRules::dns1123Subdomain(std::string(254, 'a')));
}

TEST(KubernetesNameRules, Label) {
  EXPECT_FALSE(KubernetesNameRules::dns1123Label("kube-system"));
  EXPECT_TRUE(KubernetesNameRules::dns1123Label("a.b"));
  EXPECT_TRUE(KubernetesNameRules::dns1123Label(std::string(64, 'a')));
}

TEST(KubernetesNameRules, LabelKey) {
  for (const char* good : {"leader", "example.com/leader", "Is_Leader.x", "a"}) {
    EXPECT_FALSE(KubernetesNameRules::labelKey(good)) << good;
  }
  for (const char* bad : {"", "example.com/", "/leader", "Example.com/x", "-x", "x y"}) {
    EXPECT_TRUE(KubernetesNameRules::labelKey(bad)) << bad;
  }
}

}  // namespace
}  // namespace leasehold::config

// kubectl leasehold rbac: the three objects, parsed back as YAML, grant exactly the one Lease to
// the one ServiceAccount (no create on leases), and every bad name is refused, named.
#include "kubectl/RbacManifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace leasehold::kubectl {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> strings(const YAML::Node& list) {
  std::vector<std::string> out;
  for (const auto& item : list)
    out.push_back(item.as<std::string>());
  return out;
}

TEST(RbacManifestTest, TheLeaseARoleOnItAloneAndTheBinding) {
  const RbacRequest request{"shop", "team-a", "shop-sa"};
  ASSERT_EQ(RbacManifest::check(request), std::nullopt);
  const auto docs = YAML::LoadAll(RbacManifest::yaml(request));
  ASSERT_EQ(docs.size(), 3u);

  const auto& lease = docs[0];
  EXPECT_EQ(lease["kind"].as<std::string>(), "Lease");
  EXPECT_EQ(lease["metadata"]["name"].as<std::string>(), "shop");
  EXPECT_EQ(lease["metadata"]["namespace"].as<std::string>(), "team-a");
  EXPECT_TRUE(lease["spec"].IsMap() && lease["spec"].size() == 0) << "an empty Lease";

  const auto& role = docs[1];
  EXPECT_EQ(role["kind"].as<std::string>(), "Role");
  EXPECT_EQ(role["metadata"]["name"].as<std::string>(), "leasehold-shop");
  ASSERT_EQ(role["rules"].size(), 2u);
  EXPECT_EQ(strings(role["rules"][0]["resources"]), std::vector<std::string>{"leases"});
  EXPECT_EQ(strings(role["rules"][0]["resourceNames"]), std::vector<std::string>{"shop"});
  EXPECT_EQ(strings(role["rules"][0]["verbs"]),
            (std::vector<std::string>{"get", "update", "watch", "list"}));
  EXPECT_EQ(strings(role["rules"][1]["resources"]), std::vector<std::string>{"events"});
  for (const auto& rule : role["rules"]) {
    if (strings(rule["resources"]) == std::vector<std::string>{"leases"}) {
      EXPECT_TRUE(rule["resourceNames"].IsSequence()) << "every leases rule is limited by name";
    }
  }

  const auto& binding = docs[2];
  EXPECT_EQ(binding["kind"].as<std::string>(), "RoleBinding");
  EXPECT_EQ(binding["roleRef"]["name"].as<std::string>(), "leasehold-shop");
  EXPECT_EQ(binding["subjects"][0]["kind"].as<std::string>(), "ServiceAccount");
  EXPECT_EQ(binding["subjects"][0]["name"].as<std::string>(), "shop-sa");
  EXPECT_EQ(binding["subjects"][0]["namespace"].as<std::string>(), "team-a");
}

TEST(RbacManifestTest, BadNamesAreRefusedNamingWhich) {
  const struct {
    RbacRequest request;
    std::string says;
  } cases[] = {
      {{"Shop", "default", "sa"}, "the Lease name"},
      {{"shop", "Team_A", "sa"}, "the namespace"},
      {{"shop", "default", "sa/x"}, "--serviceaccount"},
      {{std::string(250, 'a'), "default", "sa"}, "too long for the Role's name"},
  };
  for (const auto& c : cases) {
    const auto problem = RbacManifest::check(c.request);
    ASSERT_TRUE(problem.has_value()) << c.request.lease;
    EXPECT_THAT(*problem, HasSubstr(c.says));
  }
}

}  // namespace
}  // namespace leasehold::kubectl

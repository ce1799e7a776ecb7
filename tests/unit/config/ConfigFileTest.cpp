#include "config/ConfigFile.h"

#include <gtest/gtest.h>

#include "TemporaryDirectory.h"

namespace leasehold::config {
namespace {

ConfigFile parsed(const std::string& yaml) {
  auto result = ConfigFile::parse(yaml, "/etc/lh.yaml");
  EXPECT_TRUE(std::holds_alternative<ConfigFile>(result)) << std::get<ConfigError>(result).message;
  return std::get<ConfigFile>(std::move(result));
}

std::string failure(const std::string& yaml) {
  auto result = ConfigFile::parse(yaml, "/etc/lh.yaml");
  EXPECT_TRUE(std::holds_alternative<ConfigError>(result)) << yaml;
  return std::holds_alternative<ConfigError>(result) ? std::get<ConfigError>(result).message : "";
}

TEST(ConfigFile, EntriesKeepLinesAndShapes) {
  const auto file = parsed(
      "# comment\nleaseName: my-app\n\nleaseDuration: 15s\nlist:\n  - a\n"
      "map: {a: 1}\nempty:\n");
  ASSERT_EQ(file.entries().size(), 5u);
  EXPECT_EQ(file.entries()[0].key, "leaseName");
  EXPECT_EQ(file.entries()[0].line, 2);
  EXPECT_EQ(file.entries()[0].scalar, "my-app");
  EXPECT_EQ(file.entries()[1].line, 4);
  EXPECT_EQ(file.entries()[2].shape, ConfigFileEntry::Shape::List);
  EXPECT_EQ(file.entries()[3].shape, ConfigFileEntry::Shape::Map);
  EXPECT_EQ(file.entries()[4].shape, ConfigFileEntry::Shape::Null);
  EXPECT_EQ(file.describe(file.entries()[1]), "config /etc/lh.yaml:4: leaseDuration");
}

TEST(ConfigFile, EmptyFileSetsNothing) {
  EXPECT_TRUE(parsed("").entries().empty());
  EXPECT_TRUE(parsed("# only a comment\n").entries().empty());
}

TEST(ConfigFile, RejectsNonMapDuplicatesAndBadYaml) {
  EXPECT_NE(failure("- a\n- b\n").find("config /etc/lh.yaml:1: expected a map"), std::string::npos);
  EXPECT_EQ(failure("leaseName: a\nleaseName: b\n"),
            "config /etc/lh.yaml:2: leaseName: set twice (first on line 1)");
  const auto bad = failure("leaseName: a\nfoo: [unclosed\n");
  EXPECT_NE(bad.find("config /etc/lh.yaml:"), std::string::npos) << bad;
  EXPECT_NE(bad.find("not valid YAML"), std::string::npos) << bad;
}

TEST(ConfigFile, MissingFileNamesThePath) {
  testing_support::TemporaryDirectory dir;
  const auto result = ConfigFile::read(dir.path() / "nope.yaml");
  ASSERT_TRUE(std::holds_alternative<ConfigError>(result));
  EXPECT_NE(std::get<ConfigError>(result).message.find((dir.path() / "nope.yaml").string()),
            std::string::npos);
}

}  // namespace
}  // namespace leasehold::config

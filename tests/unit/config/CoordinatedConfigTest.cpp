// --coordinated from flags, environment and file; the default identity it gets (a valid
// LeaseCandidate name) and the identities it rejects, naming both flags and their sources.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ConfigLoaderFixture.h"
#include "config/ConfigPrinter.h"

namespace leasehold::config {
namespace {

using testing::HasSubstr;

struct Accepted {
  const char* name;
  std::vector<std::string> args;
  ConfigLoader::Environment env;
  const char* file;  // YAML, "" for none
  bool coordinated;
  const char* identity;
};

void PrintTo(const Accepted& c, std::ostream* os) {
  *os << c.name;
}

const Accepted kAccepted[] = {
    {"OffByDefault", {"--lease-name", "a"}, {}, "", false, "node-7_3f9a1c2b"},
    {"Flag", {"--lease-name", "a", "--coordinated"}, {}, "", true, "node-7-3f9a1c2b"},
    {"FlagFalse", {"--lease-name", "a", "--coordinated=false"}, {}, "", false, "node-7_3f9a1c2b"},
    {"Environment",
     {"--lease-name", "a"},
     {{"LEASEHOLD_COORDINATED", "true"}},
     "",
     true,
     "node-7-3f9a1c2b"},
    {"File", {"--lease-name", "a"}, {}, "coordinated: true\n", true, "node-7-3f9a1c2b"},
    {"PodName",
     {"--lease-name", "a", "--coordinated"},
     {{"POD_NAME", "web-0"}},
     "",
     true,
     "web-0-3f9a1c2b"},
    {"Version",
     {"--lease-name", "a", "--coordinated", "--coordinated-version", "1.4.0-rc.1+b7"},
     {},
     "",
     true,
     "node-7-3f9a1c2b"},
    {"GivenIdentity",
     {"--lease-name", "a", "--coordinated", "--identity", "web-0.zone-a"},
     {},
     "",
     true,
     "web-0.zone-a"},
};

class CoordinatedAccepted : public ConfigLoaderTest,
                            public testing::WithParamInterface<Accepted> {};

TEST_P(CoordinatedAccepted, Case) {
  const Accepted& c = GetParam();
  auto args = c.args;
  if (*c.file) {
    args.push_back("--config");
    args.push_back(dir_.write("c.yaml", c.file).string());
  }
  const auto config = loaded(args, c.env);
  EXPECT_EQ(config.coordinated, c.coordinated);
  EXPECT_EQ(config.identity, c.identity);
  if (std::string(c.name) == "Version") {
    EXPECT_EQ(config.coordinatedVersion, "1.4.0-rc.1+b7");
    EXPECT_THAT(ConfigPrinter::print(config), HasSubstr("coordinatedVersion: \"1.4.0-rc.1+b7\""));
  }
  const auto printed = ConfigPrinter::print(config);
  if (c.coordinated) {
    EXPECT_THAT(printed, HasSubstr("coordinated: true"));
  } else {
    EXPECT_THAT(printed, testing::Not(HasSubstr("coordinated")));
  }
}

INSTANTIATE_TEST_SUITE_P(Coordinated, CoordinatedAccepted, testing::ValuesIn(kAccepted),
                         [](const auto& info) { return std::string(info.param.name); });

const RefusedConfig kRejected[] = {
    {"Underscore",
     {"--lease-name", "a", "--coordinated", "--identity", "web_0"},
     {},
     {"--identity: \"web_0\"", "--coordinated names this replica's LeaseCandidate"}},
    {"UpperCase",
     {"--lease-name", "a", "--coordinated", "--identity", "Web-0"},
     {},
     {"--identity: \"Web-0\"", "--coordinated"}},
    {"FromEnvironment",
     {"--lease-name", "a"},
     {{"LEASEHOLD_COORDINATED", "true"}, {"LEASEHOLD_IDENTITY", "a_b"}},
     {"--identity (from LEASEHOLD_IDENTITY)", "--coordinated (from LEASEHOLD_COORDINATED)"}},
    {"HostNameDefault",
     {"--lease-name", "a", "--coordinated"},
     {{"POD_NAME", "Web_0"}},
     {"--identity: \"Web_0-3f9a1c2b\"", "--coordinated"}},
    {"VersionWithoutCoordinated",
     {"--lease-name", "a", "--coordinated-version", "1.0.0"},
     {},
     {"--coordinated-version: only with --coordinated"}},
    {"VersionWithV",
     {"--lease-name", "a", "--coordinated", "--coordinated-version", "v1.0.0"},
     {},
     {"--coordinated-version: \"v1.0.0\" is not a semantic version"}},
    {"VersionTwoNumbers",
     {"--lease-name", "a"},
     {{"LEASEHOLD_COORDINATED", "true"}, {"LEASEHOLD_COORDINATED_VERSION", "1.4"}},
     {"--coordinated-version (from LEASEHOLD_COORDINATED_VERSION): \"1.4\""}},
    {"VersionLeadingZero",
     {"--lease-name", "a", "--coordinated", "--coordinated-version", "1.04.0"},
     {},
     {"not a semantic version"}},
    {"NotABoolean",
     {"--lease-name", "a"},
     {{"LEASEHOLD_COORDINATED", "maybe"}},
     {"LEASEHOLD_COORDINATED"}},
};

class CoordinatedRejected : public RefusedConfigTest {};

TEST_P(CoordinatedRejected, Case) {
  expectRefused();
}

INSTANTIATE_TEST_SUITE_P(Coordinated, CoordinatedRejected, testing::ValuesIn(kRejected),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(ConfigLoaderTest, HelpDescribesCoordinated) {
  const auto help = load({"--help"});
  ASSERT_TRUE(std::holds_alternative<HelpRequested>(help));
  EXPECT_THAT(std::get<HelpRequested>(help).text, HasSubstr("--coordinated"));
  EXPECT_THAT(std::get<HelpRequested>(help).text, HasSubstr("CoordinatedLeaderElection"));
}

}  // namespace
}  // namespace leasehold::config

// Holds every default that --help states to the code, so that a default changed on one side
// only fails here. Each setting falls in exactly one of these groups:
//  - a concrete default ("(default 15s)", "(default: off)", "(default watch)"): compared with
//    --print-config of a configuration that sets nothing else;
//  - a derived default ("the lease duration", "half of it, at most 5s"): a row below repeats the
//    documented text and checks the derivation with inputs that are not the defaults;
//  - checked by a test elsewhere, named in checkedElsewhere();
//  - no default (required, a switch, an action): listed with the reason.
// A new setting is in none of them and fails DocumentedDefaults.EverySettingIsAccountedFor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ConfigLoaderFixture.h"
#include "config/ConfigPrinter.h"
#include "config/DurationParser.h"

namespace leasehold::config {
namespace {

using Environment = ConfigLoader::Environment;

// The text after "default" in "(default 15s)", "(default: off)" or "(...; default: off)" at the
// end of a help text.
std::optional<std::string> documentedDefault(const std::string& help) {
  static const std::regex pattern(R"((?:\(|; )default:? ([^()]*)\)$)");
  std::smatch match;
  if (!std::regex_search(help, match, pattern)) return std::nullopt;
  return match[1].str();
}

// One word ("15s", "127.0.0.1:4040", "off"), as opposed to a description of a derivation.
bool isConcrete(const std::string& value) {
  return value.find_first_of(" \t") == std::string::npos;
}

const ConfigLoader::SettingHelp& setting(const std::string& flag) {
  static const auto all = ConfigLoader::settingHelp();
  for (const auto& s : all) {
    if (s.flag == flag) return s;
  }
  throw std::out_of_range("no setting --" + flag);
}

// The settings --help gives no default for, and why.
const std::map<std::string, std::string>& withoutDefault() {
  static const std::map<std::string, std::string> table = {
      {"lease-name", "required"},
      {"context", "unset: the kubeconfig's current-context, which --help cannot name"},
      {"print-config", "an action, not a setting"},
      {"exit-on-loss", "a switch: absent means off"},
      {"etcd-endpoints", "required with --store etcd"},
      {"etcd-cacert", "unset: the system's CA certificates, as its help text says"},
      {"zk-servers", "required with --store zookeeper"},
      {"zk-cacert", "unset: TLS only when asked for, as its help text says"},
  };
  return table;
}

// Checked by another test, named here.
const std::map<std::string, std::string>& checkedElsewhere() {
  static const std::map<std::string, std::string> table = {
      // The order lives in cluster::RestConfigLoader, which this test binary does not link.
      {"kubeconfig", "cluster_test: InClusterConfigTest.LoadOrderIsTheOneKubeconfigHelpStates"},
  };
  return table;
}

// What a concrete default needs around it to show in --print-config.
const std::map<std::string, std::vector<std::string>>& shownOnlyWith() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"shard-drain", {"--shards", "2"}},
      {"etcd-cert", {"--store", "etcd", "--etcd-endpoints", "http://127.0.0.1:2379"}},
      {"etcd-key", {"--store", "etcd", "--etcd-endpoints", "http://127.0.0.1:2379"}},
      {"etcd-user", {"--store", "etcd", "--etcd-endpoints", "http://127.0.0.1:2379"}},
      {"etcd-password-file", {"--store", "etcd", "--etcd-endpoints", "http://127.0.0.1:2379"}},
      {"zk-server-lag", {"--store", "zookeeper", "--zk-servers", "127.0.0.1:2181"}},
      {"zk-tls", {"--store", "zookeeper", "--zk-servers", "127.0.0.1:2181"}},
      {"zk-cert", {"--store", "zookeeper", "--zk-servers", "127.0.0.1:2181"}},
      {"zk-key", {"--store", "zookeeper", "--zk-servers", "127.0.0.1:2181"}},
      {"zk-user", {"--store", "zookeeper", "--zk-servers", "127.0.0.1:2181"}},
      {"zk-password-file", {"--store", "zookeeper", "--zk-servers", "127.0.0.1:2181"}},
  };
  return table;
}

// A derived default: the text --help must say, and cases that check it.
struct DerivedCase {
  std::string what;
  std::vector<std::string> args;  // besides --lease-name my-app (run mode: `run ... -- true`)
  Environment env;
  std::string expected;
};
struct DerivedDefault {
  std::string flag;
  std::string documented;
  // The effective value, as --print-config or main would have it.
  std::function<std::string(const Config&)> effective;
  std::vector<DerivedCase> cases;
};

std::string duration(time::Duration d) {
  return time::formatDuration(d);
}

const std::vector<DerivedDefault>& derivedDefaults() {
  static const std::vector<DerivedDefault> table = {
      {"release-cooldown",
       "the lease duration",
       [](const Config& c) { return duration(c.releaseCooldown); },
       {
           {"no timings given", {}, {}, "15s"},
           {"a longer lease", {"--lease-duration", "40s", "--renew-deadline", "30s"}, {}, "40s"},
           {"the lease duration from --ttl", {"--ttl", "20s"}, {}, "20s"},
           {"given", {"--lease-duration", "40s", "--release-cooldown", "5s"}, {}, "5s"},
       }},
      {"renew-interval",
       "the retry period",
       [](const Config& c) { return duration(c.timings.renewEvery()); },
       {
           {"no timings given", {}, {}, "2s"},
           {"a shorter retry period", {"--retry-period", "1s"}, {}, "1s"},
           {"given",
            {"--lease-duration", "60s", "--renew-deadline", "40s", "--renew-interval", "15s"},
            {},
            "15s"},
       }},
      {"zk-session-timeout",
       "--lease-duration, or that sum when it is longer",
       [](const Config& c) { return duration(zkSessionTimeoutOf(c)); },
       {
           {"no timings given: R 10s + L 12s + I 2s",
            {"--store", "zookeeper", "--zk-servers", "z:2181"},
            {},
            "24s"},
           {"a longer lease",
            {"--store", "zookeeper", "--zk-servers", "z:2181", "--lease-duration", "30s"},
            {},
            "30s"},
           {"a single server",
            {"--store", "zookeeper", "--zk-servers", "z:2181", "--zk-server-lag", "0s"},
            {},
            "15s"},
           {"a longer renew interval",
            {"--store", "zookeeper", "--zk-servers", "z:2181", "--lease-duration", "60s",
             "--renew-deadline", "40s", "--renew-interval", "15s"},
            {},
            "67s"},
           {"given",
            {"--store", "zookeeper", "--zk-servers", "z:2181", "--zk-session-timeout", "25s"},
            {},
            "25s"},
       }},
      {"kill-grace",
       "half of it, at most 5s",
       [](const Config& c) { return duration(c.killGrace); },
       {
           {"the default renew deadline", {}, {}, "5s"},
           {"half of a short deadline", {"--renew-deadline", "6s"}, {}, "3s"},
           {"not a whole second", {"--renew-deadline", "3s", "--retry-period", "1s"}, {}, "1.5s"},
           {"at most 5s", {"--lease-duration", "30s", "--renew-deadline", "20s"}, {}, "5s"},
           {"given", {"--kill-grace", "2s"}, {}, "2s"},
       }},
      {"identity",
       "$POD_NAME or the hostname, plus _ and 8 random hex digits; - instead of _ with "
       "--coordinated",
       [](const Config& c) { return c.identity; },
       {
           // ConfigLoaderFixture: hostname node-7, random digits 3f9a1c2b.
           {"$POD_NAME", {}, {{"POD_NAME", "web-0"}}, "web-0_3f9a1c2b"},
           {"the hostname without $POD_NAME", {}, {}, "node-7_3f9a1c2b"},
           {"coordinated", {"--coordinated"}, {{"POD_NAME", "web-0"}}, "web-0-3f9a1c2b"},
           {"given", {"--identity", "me"}, {{"POD_NAME", "web-0"}}, "me"},
       }},
      {"coordinated-version",
       "leasehold's version",
       [](const Config& c) { return announcedVersion(c); },
       {
           {"not given", {"--coordinated"}, {}, LEASEHOLD_VERSION},
           {"given", {"--coordinated", "--coordinated-version", "2.1.0"}, {}, "2.1.0"},
       }},
  };
  return table;
}

// lease-namespace has one more input, the cluster access's namespace: its own table.
struct NamespaceCase {
  std::string what;
  std::vector<std::string> args;
  Environment env;
  std::optional<std::string> accessNamespace;
  std::string expected;
};
const std::string kNamespaceDocumented =
    "$POD_NAMESPACE, else the namespace of the cluster access in use: the service account's "
    "in-cluster, the context's from a kubeconfig; else \"default\"";

std::set<std::string> derivedFlags() {
  std::set<std::string> flags = {"lease-namespace"};
  for (const auto& d : derivedDefaults())
    flags.insert(d.flag);
  return flags;
}

class DocumentedDefaults : public ConfigLoaderTest {
 protected:
  // --lease-name my-app plus `args`, in run mode for a run-only setting.
  Config loadedFor(const std::string& flag, std::vector<std::string> args, Environment env = {}) {
    std::vector<std::string> all;
    const bool run = setting(flag).runOnly;
    if (run) all.push_back("run");
    all.insert(all.end(), {"--lease-name", "my-app"});
    all.insert(all.end(), args.begin(), args.end());
    if (run) all.insert(all.end(), {"--", "true"});
    return loaded(all, std::move(env));
  }
};

TEST_F(DocumentedDefaults, EverySettingIsAccountedFor) {
  const auto derived = derivedFlags();
  std::set<std::string> known;
  for (const auto& s : ConfigLoader::settingHelp()) {
    SCOPED_TRACE("--" + s.flag + ": " + s.help);
    known.insert(s.flag);
    const auto value = documentedDefault(s.help);
    const int groups = (value && isConcrete(*value)) + derived.contains(s.flag) +
                       checkedElsewhere().contains(s.flag) + withoutDefault().contains(s.flag);
    EXPECT_EQ(groups, 1) << "a concrete default, a derived one (a row here), one checked "
                            "elsewhere, or none (with the reason): exactly one of them";
    if (withoutDefault().contains(s.flag)) {
      EXPECT_FALSE(value) << "documents a default: check it rather than list it as without";
    }
  }
  // No stale rows: every list names settings that exist.
  for (const auto& flag : derived)
    EXPECT_TRUE(known.contains(flag)) << flag;
  for (const auto& [flag, reason] : withoutDefault())
    EXPECT_TRUE(known.contains(flag)) << flag;
  for (const auto& [flag, where] : checkedElsewhere())
    EXPECT_TRUE(known.contains(flag)) << flag;
  for (const auto& [flag, args] : shownOnlyWith())
    EXPECT_TRUE(known.contains(flag)) << flag;
}

// The accessor is what --help shows.
TEST_F(DocumentedDefaults, HelpShowsEachSettingsText) {
  const auto outcome = load({"--help"});
  ASSERT_TRUE(std::holds_alternative<HelpRequested>(outcome));
  const auto& text = std::get<HelpRequested>(outcome).text;
  for (const auto& s : ConfigLoader::settingHelp()) {
    EXPECT_THAT(text, testing::HasSubstr("--" + s.flag)) << s.flag;
    EXPECT_THAT(text, testing::HasSubstr(s.help)) << s.flag;
  }
}

TEST_F(DocumentedDefaults, ConcreteDefaultsAreWhatPrintConfigShows) {
  for (const auto& s : ConfigLoader::settingHelp()) {
    const auto documented = documentedDefault(s.help);
    if (!documented || !isConcrete(*documented)) continue;
    SCOPED_TRACE("--" + s.flag + " documents \"" + *documented + "\"");
    const auto context = shownOnlyWith().find(s.flag);
    const Config config = loadedFor(
        s.flag, context == shownOnlyWith().end() ? std::vector<std::string>{} : context->second);
    const std::string printed = ConfigPrinter::print(config);
    const YAML::Node node = YAML::Load(printed)[s.fileKey];
    if (*documented == "off") {
      // Off: not printed, null, empty or false.
      EXPECT_TRUE(!node || node.IsNull() || node.as<std::string>().empty() ||
                  node.as<std::string>() == "false")
          << printed;
      continue;
    }
    ASSERT_TRUE(node && node.IsScalar()) << s.fileKey << " is not in\n" << printed;
    const auto value = node.as<std::string>();
    // Durations may be written another way ("60s" is printed "1m").
    const auto a = DurationParser::parse(*documented);
    const auto b = DurationParser::parse(value);
    const bool sameDuration = std::holds_alternative<time::Duration>(a) &&
                              std::holds_alternative<time::Duration>(b) &&
                              std::get<time::Duration>(a) == std::get<time::Duration>(b);
    EXPECT_TRUE(value == *documented || sameDuration) << "printed " << s.fileKey << ": " << value;
  }
}

TEST_F(DocumentedDefaults, DerivedDefaultsFollowTheirInputs) {
  for (const auto& d : derivedDefaults()) {
    SCOPED_TRACE("--" + d.flag);
    EXPECT_EQ(documentedDefault(setting(d.flag).help), d.documented)
        << "the help text changed: check the rows below against the new text";
    for (const auto& c : d.cases) {
      SCOPED_TRACE(c.what);
      const Config config = loadedFor(d.flag, c.args, c.env);
      EXPECT_EQ(d.effective(config), c.expected);
    }
  }
}

TEST_F(DocumentedDefaults, LeaseNamespaceFollowsItsInputs) {
  EXPECT_EQ(documentedDefault(setting("lease-namespace").help), kNamespaceDocumented);
  const std::vector<NamespaceCase> cases = {
      {"$POD_NAMESPACE first", {}, {{"POD_NAMESPACE", "team-a"}}, "sa-ns", "team-a"},
      {"else the cluster access's", {}, {}, "sa-ns", "sa-ns"},
      {"else default", {}, {}, std::nullopt, "default"},
      {"given", {"--lease-namespace", "prod"}, {{"POD_NAMESPACE", "team-a"}}, "sa-ns", "prod"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const Config config = loadedFor("lease-namespace", c.args, c.env);
    // As main settles it.
    const auto variable = c.env.find("POD_NAMESPACE");
    EXPECT_EQ(leaseNamespace(config, podNamespace(variable == c.env.end() ? "" : variable->second,
                                                  c.accessNamespace)),
              c.expected);
  }
}

}  // namespace
}  // namespace leasehold::config

#pragma once
// Builds the Config from, in order of precedence:
//   1. command-line flags            --lease-duration 20s
//   2. environment                   LEASEHOLD_LEASE_DURATION=20s
//   3. the YAML file                 leaseDuration: 20s   (--config or LEASEHOLD_CONFIG)
//   4. defaults
// then validates the result. Every message names where the bad value came from (flag, variable,
// or file:line and key). --help and --version are outcomes, not exits: main decides what to do.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "config/Config.h"
#include "config/ConfigError.h"

namespace leasehold::config {

struct HelpRequested {
  std::string text;
};
struct VersionRequested {};

using ConfigOutcome = std::variant<Config, HelpRequested, VersionRequested, ConfigError>;

class ConfigLoader {
 public:
  using Environment = std::map<std::string, std::string, std::less<>>;

  // What the default identity is made of; injected so tests are deterministic.
  struct IdentitySources {
    std::function<std::string()> hostname;
    std::function<std::uint32_t()> random32;
  };

  static constexpr const char* kEnvironmentPrefix = "LEASEHOLD_";

  explicit ConfigLoader(Environment environment,
                        IdentitySources identity = systemIdentitySources());

  // `args` without the program name.
  ConfigOutcome load(const std::vector<std::string>& args) const;
  ConfigOutcome load(int argc, const char* const* argv) const;

  // The process environment as a map, for main.
  static Environment processEnvironment();
  // gethostname() and std::random_device.
  static IdentitySources systemIdentitySources();
  // "lease-name" -> "LEASEHOLD_LEASE_NAME"
  static std::string environmentName(const std::string& flag);

  // What --help says of each leasehold setting (compatibility flags aside), in its order; for
  // the tests that hold each documented default to the code.
  struct SettingHelp {
    std::string flag;     // "lease-name"
    std::string fileKey;  // "leaseName", also --print-config's key
    std::string help;
    bool runOnly = false;  // only for `leasehold run`
  };
  static std::vector<SettingHelp> settingHelp();

 private:
  Environment environment_;
  IdentitySources identity_;
};

}  // namespace leasehold::config

#pragma once
// Loads a configuration from given args, environment and files with a fixed default identity
// (hostname "node-7", random suffix 3f9a1c2b): shared by the loader and compatibility-flag tests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TemporaryDirectory.h"
#include "config/ConfigLoader.h"

namespace leasehold::config {

inline ConfigLoader::IdentitySources fixedIdentity() {
  return {[] { return std::string("node-7"); }, [] { return std::uint32_t{0x3f9a1c2b}; }};
}

class ConfigLoaderTest : public testing::Test {
 protected:
  ConfigOutcome load(std::vector<std::string> args, ConfigLoader::Environment env = {}) {
    return ConfigLoader(std::move(env), fixedIdentity()).load(args);
  }

  Config loaded(std::vector<std::string> args, ConfigLoader::Environment env = {}) {
    auto outcome = load(std::move(args), std::move(env));
    if (auto* error = std::get_if<ConfigError>(&outcome)) {
      ADD_FAILURE() << "unexpected error: " << error->message;
      return {};
    }
    EXPECT_TRUE(std::holds_alternative<Config>(outcome));
    return std::holds_alternative<Config>(outcome) ? std::get<Config>(outcome) : Config{};
  }

  std::string failure(std::vector<std::string> args, ConfigLoader::Environment env = {}) {
    auto outcome = load(std::move(args), std::move(env));
    EXPECT_TRUE(std::holds_alternative<ConfigError>(outcome)) << "expected an error";
    return std::holds_alternative<ConfigError>(outcome) ? std::get<ConfigError>(outcome).message
                                                        : "";
  }

  testing_support::TemporaryDirectory dir_;
};

// A table row of a configuration the loader refuses: what is given, and what the message must
// say (each part a substring).
struct RefusedConfig {
  const char* name;
  std::vector<std::string> args;
  ConfigLoader::Environment env;
  std::vector<std::string> mentions;
};

inline void PrintTo(const RefusedConfig& c, std::ostream* os) {
  *os << c.name;
}

class RefusedConfigTest : public ConfigLoaderTest,
                          public testing::WithParamInterface<RefusedConfig> {
 protected:
  void expectRefused() {
    const RefusedConfig& c = GetParam();
    const auto message = failure(c.args, c.env);
    for (const auto& m : c.mentions)
      EXPECT_THAT(message, testing::HasSubstr(m));
  }
};

}  // namespace leasehold::config

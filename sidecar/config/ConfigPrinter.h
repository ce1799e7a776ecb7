#pragma once
// --print-config: the effective configuration as YAML, in the same camelCase keys the --config
// file takes, so the output can be saved and used as a config file. Durations are written the
// way they are typed ("15s", "1.5s"); unset optional values as null (~).
#include <string>

#include "config/Config.h"

namespace leasehold::config {

class ConfigPrinter {
 public:
  static std::string print(const Config& config);
};

// The same, as a free function for main.
inline std::string printConfig(const Config& config) {
  return ConfigPrinter::print(config);
}

}  // namespace leasehold::config

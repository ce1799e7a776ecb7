#pragma once
// Why a configuration could not be loaded: one message, possibly several lines (one per
// problem), each naming the flag, environment variable or file line it is about.
#include <string>

namespace leasehold::config {

struct ConfigError {
  std::string message;
};

}  // namespace leasehold::config

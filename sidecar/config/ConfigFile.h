#pragma once
// The YAML configuration file (--config / LEASEHOLD_CONFIG) as a flat list of top-level keys with
// their line numbers. It knows nothing about which keys exist: ConfigLoader checks names and
// types, so that every message can say "config FILE:LINE: key: problem".
#include <filesystem>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/ConfigError.h"

namespace leasehold::config {

struct ConfigFileEntry {
  enum class Shape { Scalar, Null, List, Map };

  std::string key;
  int line = 0;  // 1-based
  Shape shape = Shape::Null;
  std::string scalar;  // the text when shape is Scalar
};

class ConfigFile {
 public:
  static std::variant<ConfigFile, ConfigError> read(const std::filesystem::path& path);
  static std::variant<ConfigFile, ConfigError> parse(std::string_view yaml,
                                                     const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  const std::vector<ConfigFileEntry>& entries() const { return entries_; }

  // "config /etc/leasehold.yaml:3: leaseName"
  std::string describe(const ConfigFileEntry& entry) const;

 private:
  std::filesystem::path path_;
  std::vector<ConfigFileEntry> entries_;
};

}  // namespace leasehold::config

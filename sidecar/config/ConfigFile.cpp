#include "config/ConfigFile.h"

#include "config/Utf8.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <sstream>

namespace leasehold::config {

namespace {

int lineOf(const YAML::Node& node) {
  const auto mark = node.Mark();
  return mark.line >= 0 ? mark.line + 1 : 0;
}

ConfigFileEntry::Shape shapeOf(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return ConfigFileEntry::Shape::Scalar;
    case YAML::NodeType::Sequence:
      return ConfigFileEntry::Shape::List;
    case YAML::NodeType::Map:
      return ConfigFileEntry::Shape::Map;
    default:
      return ConfigFileEntry::Shape::Null;
  }
}

}  // namespace

std::string ConfigFile::describe(const ConfigFileEntry& entry) const {
  return "config " + path_.string() + ":" + std::to_string(entry.line) + ": " + entry.key;
}

std::variant<ConfigFile, ConfigError> ConfigFile::read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ConfigError{"config " + path.string() + ": cannot read the file"};
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return ConfigError{"config " + path.string() + ": cannot read the file"};
  return parse(content.str(), path);
}

std::variant<ConfigFile, ConfigError> ConfigFile::parse(std::string_view yaml,
                                                        const std::filesystem::path& path) {
  ConfigFile file;
  file.path_ = path;
  const std::string prefix = "config " + path.string();
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsDefined() || root.IsNull()) return file;  // empty file: nothing set
    if (!root.IsMap()) {
      return ConfigError{prefix + ":" + std::to_string(lineOf(root)) +
                         ": expected a map of settings (key: value)"};
    }
    std::map<std::string, int> seen;
    for (const auto& item : root) {
      if (!item.first.IsScalar()) {
        return ConfigError{prefix + ":" + std::to_string(lineOf(item.first)) +
                           ": keys must be strings"};
      }
      ConfigFileEntry entry;
      entry.key = item.first.Scalar();
      entry.line = lineOf(item.first);
      entry.shape = shapeOf(item.second);
      if (entry.shape == ConfigFileEntry::Shape::Scalar) entry.scalar = item.second.Scalar();
      if (!isValidUtf8(entry.key) || !isValidUtf8(entry.scalar)) {
        return ConfigError{prefix + ":" + std::to_string(entry.line) + ": not valid UTF-8"};
      }
      const auto [previous, inserted] = seen.emplace(entry.key, entry.line);
      if (!inserted) {
        return ConfigError{file.describe(entry) + ": set twice (first on line " +
                           std::to_string(previous->second) + ")"};
      }
      file.entries_.push_back(std::move(entry));
    }
  } catch (const YAML::Exception& e) {
    return ConfigError{prefix + ":" + std::to_string(e.mark.line >= 0 ? e.mark.line + 1 : 0) +
                       ": not valid YAML: " + e.msg};
  }
  return file;
}

}  // namespace leasehold::config

#include "config/ConfigFile.h"

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

// YAML text is Unicode; yaml-cpp passes stray bytes through, but its emitter (--print-config)
// would replace them, so such a value could not be printed back.
bool isUtf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    char32_t min = 0, code = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2, min = 0x80, code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, min = 0x800, code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, min = 0x10000, code = c & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    i += length;
  }
  return true;
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
      if (!isUtf8(entry.key) || !isUtf8(entry.scalar)) {
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

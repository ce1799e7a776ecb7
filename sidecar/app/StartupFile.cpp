#include "app/StartupFile.h"

#include <fstream>
#include <sstream>

namespace leasehold::app {

std::optional<std::string> readStartupFile(const std::string& flag, const std::string& path,
                                           std::string& problem) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  if (in) content << in.rdbuf();
  if (!in || in.bad()) {
    problem = "--" + flag + ": cannot read " + path;
    return std::nullopt;
  }
  return content.str();
}

std::optional<std::string> readPemFiles(std::initializer_list<PemFile> files) {
  std::string problem;
  for (const auto& f : files) {
    if (f.path->empty()) continue;
    auto content = readStartupFile(f.flag, *f.path, problem);
    if (!content) return problem;
    *f.pem = std::move(*content);
  }
  return std::nullopt;
}

std::optional<std::string> readPasswordFile(const std::string& flag, const std::string& path,
                                            std::string& problem) {
  auto password = readStartupFile(flag, path, problem);
  if (!password) return std::nullopt;
  while (!password->empty() && (password->back() == '\n' || password->back() == '\r'))
    password->pop_back();
  if (password->empty()) {
    problem = "--" + flag + ": " + path + " is empty";
    return std::nullopt;
  }
  return password;
}

}  // namespace leasehold::app

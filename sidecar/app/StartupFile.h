#pragma once
// Files a store's process reads once at start (TLS material, a password file), with the
// problem named by the flag that gave the path. A password never reaches the problem text.
#include <initializer_list>
#include <optional>
#include <string>

namespace leasehold::app {

// The whole file, or nullopt with `problem` set ("--FLAG: cannot read PATH").
std::optional<std::string> readStartupFile(const std::string& flag, const std::string& path,
                                           std::string& problem);

// TLS material: each file whose path is set, read into its pem; the first problem, or nullopt.
struct PemFile {
  const char* flag;
  const std::string* path;
  std::string* pem;
};
std::optional<std::string> readPemFiles(std::initializer_list<PemFile> files);

// A password file's first line without its line ending; nullopt with `problem` set when the
// file cannot be read or holds nothing.
std::optional<std::string> readPasswordFile(const std::string& flag, const std::string& path,
                                            std::string& problem);

}  // namespace leasehold::app

#pragma once
// A fresh directory under $TMPDIR for one test, removed afterwards.
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace leasehold::kube::testing_support {

// Not real certificates: the loader only checks for a PEM block; TLS is the HTTP client's job.
inline const std::string kCaPem =
    "-----BEGIN CERTIFICATE-----\nQ0EgZm9yIHRlc3Rz\n-----END CERTIFICATE-----\n";
inline const std::string kClientCertPem =
    "-----BEGIN CERTIFICATE-----\nY2xpZW50IGNlcnQ=\n-----END CERTIFICATE-----\n";
inline const std::string kClientKeyPem =
    "-----BEGIN PRIVATE KEY-----\nY2xpZW50IGtleQ==\n-----END PRIVATE KEY-----\n";

class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "leasehold-kube-XXXXXX");
    path_ = ::mkdtemp(pattern.data());
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes `content` to `name` (subfolders are created); returns the full path.
  std::filesystem::path write(const std::string& name, const std::string& content) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary | std::ios::trunc) << content;
    return file;
  }

  // A /bin/sh script, made executable.
  std::filesystem::path script(const std::string& name, const std::string& body) const {
    const auto file = write(name, "#!/bin/sh\n" + body);
    ::chmod(file.c_str(), 0755);
    return file;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace leasehold::kube::testing_support

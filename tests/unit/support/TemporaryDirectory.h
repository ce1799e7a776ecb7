#pragma once
// A fresh directory under $TMPDIR for one test, removed afterwards. Shared by every unit test
// that needs real files (config files, kubeconfigs, token files, exec plugins, the status file).
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace leasehold::testing_support {

class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "leasehold-test-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot create a directory from " + pattern);
    }
    path_ = pattern;
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

  // The bytes of any file ("" when it cannot be read).
  static std::string contents(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  // The names in this directory, and in any `directory`, sorted.
  std::vector<std::string> entries() const { return entriesOf(path_); }
  static std::vector<std::string> entriesOf(const std::filesystem::path& directory) {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(directory))
      out.push_back(entry.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }

  // A file's permission bits (07777), or -1 when it cannot be stat'ed.
  static int mode(const std::filesystem::path& file) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) return -1;
    return static_cast<int>(st.st_mode & 07777);
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

}  // namespace leasehold::testing_support

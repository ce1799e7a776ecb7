#pragma once
// Reads the small files cluster access needs (kubeconfig, CA bundle, certificates, keys, tokens)
// in one go. Messages name the path and the OS error, never the content.
#include <cstddef>
#include <filesystem>
#include <string>

#include "cluster/RestConfigResult.h"

namespace leasehold::cluster {

class RestConfigFileReader {
 public:
  // Anything larger is not a credential or a kubeconfig; refusing it avoids reading a device or
  // a huge file by mistake.
  static constexpr std::size_t kMaxFileBytes = 16 * 1024 * 1024;

  // The whole file, or "PATH: cannot read: No such file or directory".
  static LoadResult<std::string> read(const std::filesystem::path& path);
};

}  // namespace leasehold::cluster

#include "publish/StatusFile.h"

namespace leasehold::publish {

StatusFile::StatusFile(std::string path) : file_(std::move(path), 0644) {}

std::optional<std::string> StatusFile::write(const std::string& content) {
  return file_.replace(content);
}

}  // namespace leasehold::publish

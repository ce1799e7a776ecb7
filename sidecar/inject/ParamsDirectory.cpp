#include "inject/ParamsDirectory.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace leasehold::inject {

namespace {

constexpr const char* kKeys[] = {"image",       "imagePullPolicy", "leaseDuration", "renewDeadline",
                                 "retryPeriod", "httpPort",        "probePort",     "logFormat",
                                 "logLevel",    "cpuRequest",      "memoryRequest", "cpuLimit",
                                 "memoryLimit"};
// A ConfigMap holds at most 1 MiB in all; a parameter is a few bytes.
constexpr std::streamsize kMaxValueBytes = 64 * 1024;

}  // namespace

std::variant<std::map<std::string, std::string>, std::string> ParamsDirectory::read(
    const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return "cannot read " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  std::map<std::string, std::string> data;
  for (const char* key : kKeys) {
    const std::string path = dir + "/" + key;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;
      return "cannot read " + path + ": " + std::strerror(errno);
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return "cannot read " + path;
    std::string value(static_cast<std::size_t>(kMaxValueBytes) + 1, '\0');
    in.read(value.data(), kMaxValueBytes + 1);
    if (in.bad()) return "cannot read " + path;
    value.resize(static_cast<std::size_t>(in.gcount()));
    if (value.size() > static_cast<std::size_t>(kMaxValueBytes)) {
      return path + " is larger than 64 KiB";
    }
    data.emplace(key, std::move(value));
  }
  return data;
}

}  // namespace leasehold::inject

#include "cluster/RestConfigFileReader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace leasehold::cluster {

namespace {

LoadError failure(const std::filesystem::path& path, const std::string& why) {
  return LoadError{path.string() + ": cannot read: " + why};
}

}  // namespace

LoadResult<std::string> RestConfigFileReader::read(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failure(path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return failure(path, std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return failure(path, "is a directory");
  }
  std::string content;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return failure(path, std::strerror(err));
    }
    if (n == 0) break;
    if (content.size() + static_cast<std::size_t>(n) > kMaxFileBytes) {
      ::close(fd);
      return failure(path, "larger than " + std::to_string(kMaxFileBytes) + " bytes");
    }
    content.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return content;
}

}  // namespace leasehold::cluster

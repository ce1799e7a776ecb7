#include "file/AtomicFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "file/FileDescriptor.h"

namespace leasehold::file {
namespace {

std::string failure(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// Writes all of [data, data + size), resuming after short writes and signals.
bool writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

AtomicFile::AtomicFile(std::string path, mode_t mode) : path_(std::move(path)), mode_(mode) {
  const auto slash = path_.rfind('/');
  directory_ = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
  const std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  temporaryTemplate_ = (slash == std::string::npos ? std::string() : path_.substr(0, slash + 1)) +
                       "." + base + ".tmp.XXXXXX";
}

std::optional<std::string> AtomicFile::replace(std::string_view content) {
  return replaceBy([&](int fd, const std::string& temporary) -> std::optional<std::string> {
    if (!writeAll(fd, content.data(), content.size())) return failure("cannot write " + temporary);
    return std::nullopt;
  });
}

std::optional<std::string> AtomicFile::replaceWithCopyOf(int source,
                                                         const std::string& sourceName) {
  return replaceBy([&](int fd, const std::string& temporary) -> std::optional<std::string> {
    std::vector<char> buffer(1 << 16);
    for (;;) {
      const ssize_t n = ::read(source, buffer.data(), buffer.size());
      if (n == 0) return std::nullopt;
      if (n < 0) {
        if (errno == EINTR) continue;
        return failure("cannot read " + sourceName);
      }
      if (!writeAll(fd, buffer.data(), static_cast<size_t>(n)))
        return failure("cannot write " + temporary);
    }
  });
}

std::optional<std::string> AtomicFile::writeTemporary(const Fill& fill, std::string& temporary) {
  std::string name = temporaryTemplate_;
  FileDescriptor out(::mkostemp(name.data(), O_CLOEXEC));
  if (!out.valid())
    return failure("cannot create a temporary file in " + directory_ + " for " + path_);
  temporary = name;
  if (auto problem = fill(out.get(), temporary)) return problem;
  // mkostemp made it 0600; fchmod is not subject to the umask.
  if (::fchmod(out.get(), mode_) != 0) return failure("cannot set the mode of " + temporary);
  if (::fsync(out.get()) != 0) return failure("cannot fsync " + temporary);
  if (!out.closeChecked()) return failure("cannot close " + temporary);
  return std::nullopt;
}

std::optional<std::string> AtomicFile::replaceBy(const Fill& fill) {
  std::string temporary;
  auto problem = writeTemporary(fill, temporary);
  if (!problem && ::rename(temporary.c_str(), path_.c_str()) != 0)
    problem = failure("cannot rename " + temporary + " onto " + path_);
  if (problem) {
    if (!temporary.empty()) ::unlink(temporary.c_str());
    return problem;
  }
  // Without this a crash right after could bring back the previous content. Some file systems
  // cannot fsync a directory (EINVAL): the file's own data is synced already.
  FileDescriptor directory(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!directory.valid()) return failure("cannot open directory " + directory_);
  if (::fsync(directory.get()) != 0 && errno != EINVAL)
    return failure("cannot fsync directory " + directory_);
  return std::nullopt;
}

}  // namespace leasehold::file

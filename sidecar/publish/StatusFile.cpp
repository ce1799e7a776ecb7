#include "publish/StatusFile.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace leasehold::publish {
namespace {

std::string errnoText(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Closes a descriptor on every path out of write().
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // close() reports deferred write errors (NFS and the like): check it once, explicitly.
  bool closeChecked() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

}  // namespace

StatusFile::StatusFile(std::string path) : path_(std::move(path)) {
  const auto slash = path_.rfind('/');
  directory_ = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
  const std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  // Same directory (rename is atomic only within one file system), hidden, and per process so
  // two sidecars pointed at one path by mistake cannot interleave their temp files.
  tempPath_ = (slash == std::string::npos ? std::string() : path_.substr(0, slash + 1)) + "." +
              base + ".tmp." + std::to_string(::getpid());
}

std::optional<std::string> StatusFile::write(const std::string& content) {
  std::optional<std::string> problem;
  {
    FileDescriptor fd(::open(tempPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) return errnoText("cannot create", tempPath_);
    std::size_t written = 0;
    while (written < content.size()) {
      const ssize_t n = ::write(fd.get(), content.data() + written, content.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        problem = errnoText("cannot write", tempPath_);
        break;
      }
      written += static_cast<std::size_t>(n);
    }
    if (!problem && ::fsync(fd.get()) != 0) problem = errnoText("cannot fsync", tempPath_);
    if (!problem && !fd.closeChecked()) problem = errnoText("cannot close", tempPath_);
  }
  if (!problem && ::rename(tempPath_.c_str(), path_.c_str()) != 0) {
    problem = errnoText("cannot rename onto", path_);
  }
  if (problem) {
    ::unlink(tempPath_.c_str());
    return problem;
  }
  // The rename is durable only once the directory entry is: without this a crash right after
  // could bring back the previous content.
  FileDescriptor dir(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return errnoText("cannot open directory", directory_);
  if (::fsync(dir.get()) != 0) return errnoText("cannot fsync directory", directory_);
  return std::nullopt;
}

}  // namespace leasehold::publish

#include "install/ExecutableCopy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace leasehold::install {

namespace {

std::string reason() {
  return std::strerror(errno);
}

// Closes the descriptor it owns; close() reports the last write-back errors of some file
// systems (NFS), so the copy closes explicitly and checks, and this is only the error path's.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

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

// The bytes of `in` into `out`; "" or the error.
std::string copyBytes(int in, int out, const std::string& source, const std::string& temporary) {
  std::vector<char> buffer(1 << 16);
  for (;;) {
    const ssize_t n = ::read(in, buffer.data(), buffer.size());
    if (n == 0) return "";
    if (n < 0) {
      if (errno == EINTR) continue;
      return "cannot read " + source + ": " + reason();
    }
    if (!writeAll(out, buffer.data(), static_cast<size_t>(n)))
      return "cannot write " + temporary + ": " + reason();
  }
}

std::string directoryOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string baseNameOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The temporary file's part: everything from its creation to its fsync'd close. "" or the error.
std::string writeTemporary(const std::string& source, const std::string& dest, int in,
                           std::string& temporary) {
  const std::string directory = directoryOf(dest);
  std::string name = (directory == "/" ? "" : directory) + "/." + baseNameOf(dest) + ".XXXXXX";
  Descriptor out(::mkostemp(name.data(), O_CLOEXEC));
  if (out.get() < 0) {
    return "cannot create a temporary file in " + directory + " for " + dest + ": " + reason();
  }
  temporary = name;
  if (auto error = copyBytes(in, out.get(), source, temporary); !error.empty()) return error;
  // mkostemp made it 0600; fchmod is not subject to the umask.
  if (::fchmod(out.get(), 0755) != 0)
    return "cannot make " + temporary + " executable: " + reason();
  if (::fsync(out.get()) != 0) return "cannot sync " + temporary + ": " + reason();
  if (::close(out.release()) != 0) return "cannot write " + temporary + ": " + reason();
  return "";
}

}  // namespace

std::string copyExecutable(const std::string& source, const std::string& dest) {
  if (dest.empty()) return "the destination is empty";
  if (dest.back() == '/') return dest + ": a directory; give the file's path (DIR/leasehold)";
  struct stat st {};
  if (::stat(dest.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return dest + ": a directory; give the file's path (" + dest + "/leasehold)";

  Descriptor in(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) return "cannot read " + source + ": " + reason();

  std::string temporary;
  std::string error = writeTemporary(source, dest, in.get(), temporary);
  if (error.empty() && ::rename(temporary.c_str(), dest.c_str()) != 0)
    error = "cannot rename " + temporary + " to " + dest + ": " + reason();
  if (!error.empty()) {
    if (!temporary.empty()) ::unlink(temporary.c_str());
    return error;
  }
  // The rename itself durable too. Some file systems cannot fsync a directory (EINVAL): the
  // file's own data is synced already, which is what matters for an emptyDir.
  Descriptor directory(::open(directoryOf(dest).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (directory.get() >= 0 && ::fsync(directory.get()) != 0 && errno != EINVAL)
    return "cannot sync the directory of " + dest + ": " + reason();
  return "";
}

}  // namespace leasehold::install

#pragma once
// Owns one file descriptor and closes it on every path out of a scope. close() is where some file
// systems (NFS) report deferred write errors, so the success path calls closeChecked() once and
// checks it; the destructor's close is the error path's and its result is moot.
#include <unistd.h>

namespace leasehold::file {

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

  // Closes now; false when close() failed (errno says why).
  bool closeChecked() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

}  // namespace leasehold::file

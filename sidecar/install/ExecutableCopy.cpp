#include "install/ExecutableCopy.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "file/AtomicFile.h"
#include "file/FileDescriptor.h"

namespace leasehold::install {

std::string copyExecutable(const std::string& source, const std::string& dest) {
  if (dest.empty()) return "the destination is empty";
  if (dest.back() == '/') return dest + ": a directory; give the file's path (DIR/leasehold)";
  struct stat st {};
  if (::stat(dest.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return dest + ": a directory; give the file's path (" + dest + "/leasehold)";

  file::FileDescriptor in(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return "cannot read " + source + ": " + std::strerror(errno);
  return file::AtomicFile(dest, 0755).replaceWithCopyOf(in.get(), source).value_or("");
}

}  // namespace leasehold::install

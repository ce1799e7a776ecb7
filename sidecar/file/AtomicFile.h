#pragma once
// A file replaced whole or not at all, so that a reader (or a kubelet starting the binary) sees
// the previous content or the new one, never a mix or an empty file:
//   write a temporary file in the same directory (rename is atomic only within one file system),
//   give it its mode, fsync it, rename it over the target, fsync the directory (so the rename
//   itself survives a crash of the node).
// The temporary file is hidden (".NAME.tmp.XXXXXX", unique per write, so two writers pointed at
// one path by mistake cannot interleave) and removed on any failure, leaving the target as it
// was. Blocking I/O with two fsyncs: never on the event loop (publish::StatusFileWriter's thread,
// or start-up).
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace leasehold::file {

class AtomicFile {
 public:
  // `mode` is set with fchmod, so the umask does not narrow it.
  AtomicFile(std::string path, mode_t mode);

  // Replaces the content with `content`. Returns why not (naming the file and the system's
  // reason), or nullopt. Never throws.
  std::optional<std::string> replace(std::string_view content);

  // Replaces the content with everything read from `source` until its end; `sourceName` names it
  // in errors ("cannot read SOURCE: ...").
  std::optional<std::string> replaceWithCopyOf(int source, const std::string& sourceName);

  const std::string& path() const { return path_; }
  const std::string& directory() const { return directory_; }

 private:
  // Writes the temporary file's bytes to `fd`; nullopt or why not.
  using Fill = std::function<std::optional<std::string>(int fd, const std::string& temporary)>;
  std::optional<std::string> replaceBy(const Fill& fill);
  std::optional<std::string> writeTemporary(const Fill& fill, std::string& temporary);

  std::string path_;
  mode_t mode_;
  std::string directory_;
  std::string temporaryTemplate_;
};

}  // namespace leasehold::file

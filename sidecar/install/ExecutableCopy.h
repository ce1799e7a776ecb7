#pragma once
// Copies an executable file so that DEST never names a half-written one: the bytes go to a
// temporary file in DEST's directory (the same file system, so the rename is atomic), which is
// made mode 0755, fsync'd and then renamed over DEST; the directory is fsync'd after the rename.
// On any failure the temporary file is removed and DEST is left as it was. Blocking I/O: for
// start-up only, never on the event loop.
#include <string>

namespace leasehold::install {

// Returns "" on success, else what failed, naming DEST (and SOURCE when reading it failed) and
// the system's reason, e.g. "cannot create a temporary file in /leasehold for
// /leasehold/leasehold: Permission denied". DEST must be a file's path: an existing directory
// is refused (it is not copied into, unlike cp).
std::string copyExecutable(const std::string& source, const std::string& dest);

}  // namespace leasehold::install

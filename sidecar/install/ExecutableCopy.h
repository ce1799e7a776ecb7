#pragma once
// Copies an executable file so that DEST never names a half-written one (file::AtomicFile, mode
// 0755): on any failure DEST is left as it was and no temporary file stays behind. Blocking I/O:
// for start-up only, never on the event loop.
#include <string>

namespace leasehold::install {

// Returns "" on success, else what failed, naming DEST (and SOURCE when reading it failed) and
// the system's reason, e.g. "cannot create a temporary file in /leasehold for
// /leasehold/leasehold: Permission denied". DEST must be a file's path: an existing directory
// is refused (it is not copied into, unlike cp).
std::string copyExecutable(const std::string& source, const std::string& dest);

}  // namespace leasehold::install

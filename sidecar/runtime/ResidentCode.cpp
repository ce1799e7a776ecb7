#include "runtime/ResidentCode.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>

namespace leasehold::runtime {

void keepOnlyTouchedCodeResident() {
  // Every read-only file mapping (the binary's text and constants, libc, the loader). Read once,
  // at start-up, from a file that never blocks.
  std::FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    std::uintptr_t begin = 0, end = 0;
    char perms[5] = {};
    unsigned long long offset = 0;
    char device[16] = {};
    unsigned long inode = 0;
    if (std::sscanf(line, "%lx-%lx %4s %llx %15s %lu", &begin, &end, perms, &offset, device,
                    &inode) != 6) {
      continue;
    }
    if (inode == 0 || perms[1] == 'w') continue;  // anonymous or writable: not ours to touch
    void* start = reinterpret_cast<void*>(begin);
    if (::madvise(start, end - begin, MADV_RANDOM) != 0) continue;
    // Code is never written, so dropping its pages only unmaps them. Read-only data may not be
    // clean (relocated, then made read-only: RELRO), so its pages stay.
    if (perms[2] == 'x') ::madvise(start, end - begin, MADV_DONTNEED);
  }
  std::fclose(maps);
}

}  // namespace leasehold::runtime

namespace leasehold::runtime {

std::unique_ptr<time::Timer> keepOnlyTouchedCodeResidentAfter(time::Clock& clock,
                                                              time::Duration delay) {
  auto timer = clock.makeTimer([] { keepOnlyTouchedCodeResident(); });
  timer->armAt(clock.now() + delay);
  return timer;
}

}  // namespace leasehold::runtime

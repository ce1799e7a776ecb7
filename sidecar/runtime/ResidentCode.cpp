#include "runtime/ResidentCode.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace leasehold::runtime {

namespace {

// Pages per piece of a split mapping. Measured with 3 sidecars on the test API server (bench/
// results/2026-12-07-size.md): 1 page gives the least RSS but twice the mappings (about 2,400,
// each a kernel object of ~200 bytes) and ~10 ms more from exec to the first /leader answer; 2
// pages cost ~5 ms and half the mappings for ~0.3-0.7 MB more RSS; 4 pages save little more.
constexpr std::uintptr_t kPagesPerPiece = 2;

struct CodeRange {
  std::uintptr_t begin;
  std::uintptr_t end;
};

// What the first call found: /proc/self/maps is read once, the split mappings make it long.
struct Mappings {
  bool scanned = false;
  std::vector<CodeRange> code;
};

Mappings& mappings() {
  static Mappings m;
  return m;
}

// Alternating advice on neighbouring pieces keeps the kernel from merging them back into one
// mapping (the flags differ), so fault-around, which never crosses a mapping's end, maps at
// most one piece per fault. Both kinds of advice only concern read-ahead from disk: MADV_RANDOM
// none, MADV_NORMAL the default.
void split(std::uintptr_t begin, std::uintptr_t end, std::uintptr_t piece) {
  bool random = true;
  for (std::uintptr_t at = begin; at < end; at += piece, random = !random) {
    const std::uintptr_t size = end - at < piece ? end - at : piece;
    ::madvise(reinterpret_cast<void*>(at), size, random ? MADV_RANDOM : MADV_NORMAL);
  }
}

void scan(Mappings& m) {
  m.scanned = true;
  // Every read-only file mapping (the binary's text and constants, libc, the loader). Read once,
  // at start-up, from a file that never blocks.
  std::FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t piece = page * kPagesPerPiece;
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
    // Code is never written, so dropping its pages only unmaps them. Read-only data may not be
    // clean (relocated, then made read-only: RELRO), so its pages stay; split, it grows by a
    // piece at a time too.
    if (perms[2] == 'x') m.code.push_back({begin, end});
    split(begin, end, piece);
  }
  std::fclose(maps);
}

}  // namespace

void keepOnlyTouchedCodeResident() {
  Mappings& m = mappings();
  if (!m.scanned) scan(m);
  for (const CodeRange& r : m.code) {
    ::madvise(reinterpret_cast<void*>(r.begin), r.end - r.begin, MADV_DONTNEED);
  }
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

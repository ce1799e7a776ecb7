// keepOnlyTouchedCodeResident on this test process: afterwards fewer code pages are resident
// (fault-around had mapped many that never ran), the process keeps running normally, and
// relocated read-only data is left alone (a pointer table read after the call still works);
// every read-only file mapping is split into pieces of at most two pages (so that fault-around
// maps no more than that); the delayed drop runs at its time on the clock, not before.
#include "runtime/ResidentCode.h"

#include <gtest/gtest.h>

#include "Emulation.h"
#include "FakeClock.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace leasehold::runtime {
namespace {

// kB resident in executable file mappings, from /proc/self/smaps.
long residentCodeKb() {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool code = false;
  long total = 0;
  while (std::getline(smaps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, device, inode;
    if (line.find('-') < line.find(' ') &&
        (fields >> range >> perms >> offset >> device >> inode)) {
      code = perms.size() >= 3 && perms[2] == 'x' && inode != "0";
      continue;
    }
    if (code && line.rfind("Rss:", 0) == 0) total += std::stol(line.substr(4));
  }
  return total;
}

// The largest read-only mapping of this test's executable, in pages, and how many there are
// (other files may be mapped later than the first call, e.g. by a library).
struct ReadOnlyMappings {
  long largestPages = 0;
  long count = 0;
};

ReadOnlyMappings readOnlyExecutableMappings() {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  ReadOnlyMappings out;
  const long page = ::sysconf(_SC_PAGESIZE);
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, device, inode, path;
    if (!(fields >> range >> perms >> offset >> device >> inode >> path)) continue;
    if (path != self || perms.size() < 2 || perms[1] == 'w') continue;
    const auto dash = range.find('-');
    const long pages = static_cast<long>((std::stoul(range.substr(dash + 1), nullptr, 16) -
                                          std::stoul(range.substr(0, dash), nullptr, 16)) /
                                         static_cast<unsigned long>(page));
    out.largestPages = std::max(out.largestPages, pages);
    out.count++;
  }
  return out;
}

const char* const kNames[] = {"relocated", "pointer", "table"};

TEST(ResidentCodeTest, DropsCodePagesThatDoNotRunAndKeepsRunning) {
  if (const char* emulator = leasehold::testing_support::userModeEmulator()) {
    // The emulated program's code is translated, not executed from its mapped pages, and the
    // Rss that qemu-user shows for them does not follow MADV_DONTNEED.
    GTEST_SKIP() << emulator << ": resident code pages are not the program's own";
  }
  const long before = residentCodeKb();
  keepOnlyTouchedCodeResident();
  const long after = residentCodeKb();
  EXPECT_LT(after, before) << "resident code " << before << " kB -> " << after << " kB";
  EXPECT_EQ(std::string(kNames[1]), "pointer");
  keepOnlyTouchedCodeResident();  // twice is harmless
  EXPECT_EQ(std::string(kNames[2]), "table");
}

TEST(ResidentCodeTest, SplitsTheExecutablesReadOnlyMappingsIntoPiecesOfTwoPages) {
  if (const char* emulator = leasehold::testing_support::userModeEmulator()) {
    // qemu-user keeps the guest's mappings itself and its /proc/self/maps does not split on
    // madvise advice (the full suite's arm64-unit showed one 221-page mapping, 2 in all).
    GTEST_SKIP() << emulator << ": /proc/self/maps is the emulator's, not the kernel's";
  }
  keepOnlyTouchedCodeResident();
  const ReadOnlyMappings after = readOnlyExecutableMappings();
  EXPECT_LE(after.largestPages, 2) << "fault-around would map up to 16 pages in a larger one";
  EXPECT_GT(after.count, 100) << "this test binary's text alone is megabytes";
}

// Fault-around maps code pages near every page that runs; run enough test code to bring some
// back after a drop.
void touchCode() {
  std::ostringstream text;
  for (int i = 0; i < 100; i++)
    text << i << std::string(kNames[i % 3]);
  EXPECT_FALSE(text.str().empty());
}

TEST(ResidentCodeTest, TheDelayedDropRunsOnceAtItsTime) {
  using namespace std::chrono_literals;
  if (const char* emulator = leasehold::testing_support::userModeEmulator()) {
    // The emulated program's code is translated, not executed from its mapped pages, and the
    // Rss that qemu-user shows for them does not follow MADV_DONTNEED.
    GTEST_SKIP() << emulator << ": resident code pages are not the program's own";
  }
  time::FakeClock clock;
  auto timer = keepOnlyTouchedCodeResidentAfter(clock, 10s);
  ASSERT_TRUE(timer->armed());
  clock.advance(9s);
  EXPECT_TRUE(timer->armed()) << "not before its time";
  touchCode();
  const long before = residentCodeKb();
  clock.advance(1s);
  EXPECT_FALSE(timer->armed());
  const long after = residentCodeKb();
  EXPECT_LT(after, before) << "resident code " << before << " kB -> " << after << " kB";
}

}  // namespace
}  // namespace leasehold::runtime

// keepOnlyTouchedCodeResident on this test process: afterwards fewer code pages are resident
// (fault-around had mapped many that never ran), the process keeps running normally, and
// relocated read-only data is left alone (a pointer table read after the call still works).
#include "runtime/ResidentCode.h"

#include <gtest/gtest.h>

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

const char* const kNames[] = {"relocated", "pointer", "table"};

TEST(ResidentCodeTest, DropsCodePagesThatDoNotRunAndKeepsRunning) {
  const long before = residentCodeKb();
  keepOnlyTouchedCodeResident();
  const long after = residentCodeKb();
  EXPECT_LT(after, before) << "resident code " << before << " kB -> " << after << " kB";
  EXPECT_EQ(std::string(kNames[1]), "pointer");
  keepOnlyTouchedCodeResident();  // twice is harmless
  EXPECT_EQ(std::string(kNames[2]), "table");
}

}  // namespace
}  // namespace leasehold::runtime

// The time vocabulary's formatting: durations as the flags write them, wall time as a
// Kubernetes MicroTime.
#include <gtest/gtest.h>

#include "time/Time.h"

namespace leasehold::time {
namespace {

using namespace std::chrono_literals;

TEST(FormatTest, DurationsAndMicroTime) {
  EXPECT_EQ(formatDuration(15s), "15s");
  EXPECT_EQ(formatDuration(500ms), "500ms");
  EXPECT_EQ(formatDuration(1500ms), "1.5s");
  EXPECT_EQ(formatDuration(2min), "2m");
  const WallTime t =
      std::chrono::sys_days(std::chrono::year(2026) / 11 / 30) + 10h + 5min + 2s + 123456us;
  EXPECT_EQ(formatMicroTime(t), "2026-11-30T10:05:02.123456Z");
  EXPECT_EQ(formatMicroTime(WallTime(std::chrono::sys_days(std::chrono::year(1999) / 1 / 2))),
            "1999-01-02T00:00:00.000000Z");
}

TEST(MicroTime, EdgesOfTheRepresentableRange) {
  using std::chrono::sys_days;
  using std::chrono::year;
  EXPECT_EQ(formatMicroTime(WallTime{}), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(formatMicroTime(WallTime{} - 1us), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(formatMicroTime(WallTime(sys_days(year(0) / 1 / 1))), "0000-01-01T00:00:00.000000Z");
  EXPECT_EQ(formatMicroTime(WallTime(sys_days(year(10000) / 1 / 1)) - 1us),
            "9999-12-31T23:59:59.999999Z");
  EXPECT_EQ(formatMicroTime(WallTime(sys_days(year(10000) / 1 / 1))),
            "10000-01-01T00:00:00.000000Z");  // shown, but no MicroTime parses it
  // Every microsecond digit lands where it belongs.
  EXPECT_EQ(formatMicroTime(WallTime(sys_days(year(2026) / 12 / 31)) + 23h + 59min + 7s + 80901us),
            "2026-12-31T23:59:07.080901Z");
}

}  // namespace
}  // namespace leasehold::time

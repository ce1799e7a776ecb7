#include "election/ElectionTimings.h"

#include <gtest/gtest.h>

namespace leasehold::election {
namespace {

// The tests speak the time vocabulary unqualified.
using namespace leasehold::time;
using namespace std::chrono_literals;

struct TimingCase {
  const char* name;
  Duration d, r, p;
  const char* expectInMessage;  // nullptr: valid
};

class ElectionTimingsTest : public ::testing::TestWithParam<TimingCase> {};

TEST_P(ElectionTimingsTest, Validates) {
  const auto& c = GetParam();
  const auto error = ElectionTimings{c.d, c.r, c.p, 1.2}.validate();
  if (!c.expectInMessage) {
    EXPECT_FALSE(error) << *error;
    return;
  }
  ASSERT_TRUE(error);
  EXPECT_NE(error->find(c.expectInMessage), std::string::npos) << *error;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ElectionTimingsTest,
    ::testing::Values(
        TimingCase{"Defaults", 15s, 10s, 2s, nullptr},
        TimingCase{"Scaled", 2s, 1500ms, 300ms, nullptr},
        TimingCase{"DurationEqualsDeadline", 10s, 10s, 2s,
                   "--lease-duration (10s) must be greater than --renew-deadline (10s)"},
        TimingCase{"DurationBelowDeadline", 5s, 10s, 2s, "--lease-duration (5s)"},
        TimingCase{"DeadlineTooCloseToPeriod", 15s, 2400ms, 2s,
                   "--renew-deadline (2.4s) must be greater than 1.2 x --retry-period (2s)"},
        TimingCase{"ZeroPeriod", 15s, 10s, 0s, "--retry-period (0s) must be greater than 0"},
        TimingCase{"NegativePeriod", 15s, 10s, -1s, "--retry-period"},
        TimingCase{"FractionalDuration", 2500ms, 2s, 500ms, "whole number of seconds"}),
    [](const auto& info) { return std::string(info.param.name); });

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
}  // namespace leasehold::election

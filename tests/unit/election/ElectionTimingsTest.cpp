#include "election/ElectionTimings.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "FakeClock.h"
#include "MemoryLeaseStore.h"
#include "election/lease/Elector.h"

namespace leasehold::election {
namespace {

// The tests speak the time vocabulary unqualified.
using namespace leasehold::time;
using namespace std::chrono_literals;

struct TimingCase {
  const char* name;
  Duration d, r, p;
  const char* expectInMessage;  // nullptr: valid
  std::optional<Duration> i = std::nullopt;
};

ElectionTimings timingsOf(const TimingCase& c) {
  ElectionTimings t{c.d, c.r, c.p, 1.2};
  t.renewInterval = c.i;
  return t;
}

class ElectionTimingsTest : public ::testing::TestWithParam<TimingCase> {};

TEST_P(ElectionTimingsTest, Validates) {
  const auto& c = GetParam();
  const auto error = timingsOf(c).validate();
  if (!c.expectInMessage) {
    EXPECT_FALSE(error) << *error;
    return;
  }
  ASSERT_TRUE(error);
  EXPECT_NE(error->find(c.expectInMessage), std::string::npos) << *error;
}

// The Elector checks the same rule when it is built (client-go's constructor does too): the
// configuration layer is not the only thing standing between bad timings and a split brain.
TEST_P(ElectionTimingsTest, TheElectorRefusesWhatValidateRefuses) {
  const auto& c = GetParam();
  FakeClock clock;
  MemoryLeaseBackend backend;
  MemoryLeaseStore store(backend, clock);
  auto build = [&] {
    Elector elector(clock, store, {Identity{"a"}, timingsOf(c)}, [] { return 0.5; });
  };
  if (!c.expectInMessage) {
    EXPECT_NO_THROW(build());
    return;
  }
  try {
    build();
    FAIL() << "built an Elector with impossible timings";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(c.expectInMessage), std::string::npos) << e.what();
  }
}

TEST(ElectorConstruction, RefusesAnEmptyIdentity) {
  FakeClock clock;
  MemoryLeaseBackend backend;
  MemoryLeaseStore store(backend, clock);
  EXPECT_THROW(Elector(clock, store, {Identity{""}, ElectionTimings{}}, [] { return 0.5; }),
               std::invalid_argument);
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
        TimingCase{"FractionalDuration", 2500ms, 2s, 500ms, "whole number of seconds"},
        // --renew-interval: I + the request timeout (R/2 within 0.5s..5s) + P <= R.
        TimingCase{"RenewIntervalOfTheIssue", 60s, 40s, 2s, nullptr, 15s},
        TimingCase{"RenewIntervalAtTheLimit", 15s, 10s, 2s, nullptr, 3s},
        TimingCase{"RenewIntervalLeavesNoRetry", 15s, 10s, 2s,
                   "--renew-interval (3.001s) + the request timeout (5s, half", 3001ms},
        TimingCase{"RenewIntervalScaled", 3s, 2s, 500ms, "must be at most --renew-deadline (2s)",
                   600ms},
        TimingCase{"ZeroRenewInterval", 15s, 10s, 2s,
                   "--renew-interval (0s) must be greater than 0", 0s}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace leasehold::election

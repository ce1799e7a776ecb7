// The watchdog's table of guarded groups: several groups, each killed at its own instant, a
// stand-down for one group leaves the others guarded, group 0 stands down for all, and when
// the supervisor vanishes every group guarded is taken.
#include "supervise/WatchdogGuards.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace leasehold::supervise {
namespace {

struct GuardStep {
  WatchdogOrder order;
  std::int64_t nextKillAt;  // after the order
};

struct GuardCase {
  const char* name;
  std::vector<GuardStep> steps;
  std::int64_t dueAt;              // then takeDue(dueAt)
  std::vector<std::int64_t> due;   // sorted
  std::vector<std::int64_t> rest;  // what takeAll finds afterwards, sorted
};

std::vector<std::int64_t> sorted(const std::int64_t* groups, std::size_t n) {
  std::vector<std::int64_t> v(groups, groups + n);
  std::sort(v.begin(), v.end());
  return v;
}

class WatchdogGuardsTableTest : public ::testing::TestWithParam<GuardCase> {};

TEST_P(WatchdogGuardsTableTest, KillsEachGroupAtItsOwnInstant) {
  const auto& c = GetParam();
  WatchdogGuards guards;
  for (std::size_t i = 0; i < c.steps.size(); i++) {
    SCOPED_TRACE("step " + std::to_string(i));
    ASSERT_TRUE(guards.apply(c.steps[i].order));
    EXPECT_EQ(guards.nextKillAt(), c.steps[i].nextKillAt);
  }
  std::int64_t out[WatchdogGuards::kCapacity];
  EXPECT_EQ(sorted(out, guards.takeDue(c.dueAt, out, WatchdogGuards::kCapacity)), c.due);
  EXPECT_EQ(sorted(out, guards.takeAll(out, WatchdogGuards::kCapacity)), c.rest);
  EXPECT_EQ(guards.size(), 0U);
  EXPECT_EQ(guards.nextKillAt(), 0);
}

const GuardCase kGuardCases[] = {
    {"NothingGuarded", {}, 1000, {}, {}},
    {"OneGroupDueAtItsInstant", {{{100, 50}, 50}}, 50, {100}, {}},
    {"OneGroupNotYetDue", {{{100, 50}, 50}}, 49, {}, {100}},
    {"EachGroupItsOwnInstant",
     {{{100, 50}, 50}, {{200, 30}, 30}, {{300, 90}, 30}},
     60,
     {100, 200},
     {300}},
    {"ANewerOrderMovesOnlyItsGroup",
     {{{100, 50}, 50}, {{200, 30}, 30}, {{200, 80}, 50}},
     60,
     {100},
     {200}},
    {"AnEarlierInstantCountsToo", {{{100, 50}, 50}, {{100, 20}, 20}}, 20, {100}, {}},
    {"StandDownForOneGroupLeavesTheOthers",
     {{{100, 50}, 50}, {{200, 30}, 30}, {{200, 0}, 50}},
     1000,
     {100},
     {}},
    {"StandDownForAGroupNotGuardedChangesNothing",
     {{{100, 50}, 50}, {{999, 0}, 50}},
     10,
     {},
     {100}},
    {"GroupZeroStandsDownForAll", {{{100, 50}, 50}, {{200, 30}, 30}, {{0, 0}, 0}}, 1000, {}, {}},
    {"GuardedAgainAfterStandingDown",
     {{{100, 50}, 50}, {{0, 0}, 0}, {{100, 70}, 70}},
     70,
     {100},
     {}},
};

INSTANTIATE_TEST_SUITE_P(Orders, WatchdogGuardsTableTest, ::testing::ValuesIn(kGuardCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(WatchdogGuardsTest, TheSupervisorGoneTakesEveryGroup) {
  WatchdogGuards guards;
  for (std::int64_t g = 1; g <= 8; g++)
    ASSERT_TRUE(guards.apply({g * 10, 1000 + g}));
  std::int64_t out[WatchdogGuards::kCapacity];
  EXPECT_EQ(sorted(out, guards.takeAll(out, WatchdogGuards::kCapacity)),
            (std::vector<std::int64_t>{10, 20, 30, 40, 50, 60, 70, 80}));
}

TEST(WatchdogGuardsTest, AFullTableRefusesANewGroupButStillMovesAGuardedOne) {
  WatchdogGuards guards;
  for (std::size_t g = 1; g <= WatchdogGuards::kCapacity; g++)
    ASSERT_TRUE(guards.apply({static_cast<std::int64_t>(g), 500}));
  EXPECT_FALSE(guards.apply({1'000'000, 100}));
  EXPECT_TRUE(guards.apply({1, 100}));
  EXPECT_EQ(guards.nextKillAt(), 100);
  EXPECT_TRUE(guards.apply({2, 0}));
  EXPECT_TRUE(guards.apply({1'000'000, 100}));  // room again
  EXPECT_EQ(guards.size(), WatchdogGuards::kCapacity);
}

TEST(WatchdogGuardsTest, TakeDueStopsAtTheCapacityGivenAndLeavesTheRestGuarded) {
  WatchdogGuards guards;
  for (std::int64_t g = 1; g <= 5; g++)
    ASSERT_TRUE(guards.apply({g, 10}));
  std::int64_t out[2];
  EXPECT_EQ(guards.takeDue(10, out, 2), 2U);
  EXPECT_EQ(guards.size(), 3U);
  EXPECT_EQ(guards.nextKillAt(), 10);
}

}  // namespace
}  // namespace leasehold::supervise

#include "FakeClock.h"

#include <gtest/gtest.h>

#include <vector>

namespace leasehold::time {
namespace {

using namespace std::chrono_literals;

TEST(FakeClockTest, AdvanceFiresDueTimersInDeadlineOrderAtTheirDeadline) {
  FakeClock clock;
  const MonoTime start = clock.now();
  std::vector<std::pair<int, Duration>> fired;
  auto t1 = clock.makeTimer([&] { fired.push_back({1, clock.now() - start}); });
  auto t2 = clock.makeTimer([&] { fired.push_back({2, clock.now() - start}); });
  auto t3 = clock.makeTimer([&] { fired.push_back({3, clock.now() - start}); });
  t1->armAt(start + 3s);
  t2->armAt(start + 1s);
  t3->armAt(start + 10s);
  clock.advance(5s);
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0], std::make_pair(2, Duration(1s)));
  EXPECT_EQ(fired[1], std::make_pair(1, Duration(3s)));
  EXPECT_EQ(clock.now() - start, 5s);
  EXPECT_TRUE(t3->armed());
}

TEST(FakeClockTest, JumpRunsNothingUntilTheNextAdvance) {
  FakeClock clock;
  int fired = 0;
  auto t = clock.makeTimer([&] { fired++; });
  t->armAt(clock.now() + 1s);
  clock.jump(10s);
  EXPECT_EQ(fired, 0);
  clock.runDue();
  EXPECT_EQ(fired, 1);
}

TEST(FakeClockTest, TimersArmedFromCallbacksFireInTheSameAdvance) {
  FakeClock clock;
  int count = 0;
  std::unique_ptr<Timer> t;
  t = clock.makeTimer([&] {
    if (++count < 5) t->armAt(clock.now() + 1s);
  });
  t->armAt(clock.now() + 1s);
  clock.advance(10s);
  EXPECT_EQ(count, 5);
}

TEST(FakeClockTest, DestroyedAndDisarmedTimersDoNotFire) {
  FakeClock clock;
  int fired = 0;
  auto a = clock.makeTimer([&] { fired++; });
  auto b = clock.makeTimer([&] { fired++; });
  a->armAt(clock.now() + 1s);
  b->armAt(clock.now() + 1s);
  a.reset();
  b->disarm();
  clock.advance(2s);
  EXPECT_EQ(fired, 0);
  EXPECT_EQ(clock.armedTimers(), 0u);
}

TEST(FakeClockTest, WallClockFollowsMonotonicTimePlusOffset) {
  FakeClock clock;
  const WallTime w = clock.wallNow();
  clock.advance(1500ms);
  EXPECT_EQ(clock.wallNow() - w, 1500ms);
  clock.setWallOffset(-1h);
  EXPECT_EQ(clock.wallNow() - w, 1500ms - 1h);
}

}  // namespace
}  // namespace leasehold::time

// AsioClock's clock-rate test hook: the scaling arithmetic, the environment switch, and real
// timers on a real io_context (short waits only).
#include "runtime/AsioClock.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/asio/io_context.hpp>
#include <random>
#include <thread>

namespace leasehold::runtime {
namespace {

using namespace leasehold::time;
using namespace std::chrono_literals;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

TEST(ClockScaleTest, IdentityIsExact) {
  const ClockScale s(MonoTime(5s), 1.0);
  EXPECT_EQ(s.toScaled(MonoTime(123456789ns)), MonoTime(123456789ns));
  EXPECT_EQ(s.toReal(MonoTime(987654321ns)), MonoTime(987654321ns));
}

// Exact up to the nanosecond lost to binary fractions (0.95 is not representable).
void expectWithinANanosecond(MonoTime a, MonoTime b) {
  EXPECT_LE(std::chrono::abs(a - b), 1ns) << (a - b).count();
}

TEST(ClockScaleTest, RunsAtTheRateFromTheStart) {
  const MonoTime start(1000s);
  const ClockScale fast(start, 1.05), slow(start, 0.95);
  EXPECT_EQ(fast.toScaled(start), start);
  expectWithinANanosecond(fast.toScaled(start + 100s), start + 105s);
  expectWithinANanosecond(slow.toScaled(start + 100s), start + 95s);
  expectWithinANanosecond(fast.toReal(start + 105s), start + 100s);
  expectWithinANanosecond(slow.toReal(start + 95s), start + 100s);
  // Before the start too (a deadline computed from an old reading).
  expectWithinANanosecond(fast.toScaled(start - 100s), start - 105s);
}

// toReal(d) is the earliest real instant at which the scaled clock reads at least d: a timer
// armed there can never fire early, and not a nanosecond later than needed.
TEST(ClockScaleTest, ToRealIsTheEarliestInstantReachingTheDeadline) {
  std::mt19937_64 rng(7);
  for (double rate : {0.5, 0.95, 1.05, 1.0 / 3.0 + 1, 2.0}) {
    const ClockScale s(MonoTime(std::chrono::hours(24 * 30)), rate);
    for (int i = 0; i < 20000; ++i) {
      // Deadlines from the past up to ~10 days ahead, nanosecond-odd.
      const auto offset =
          Duration(static_cast<std::int64_t>(rng() % 864'000'000'000'000ULL) - 1'000'000'000'000LL);
      const MonoTime deadline = MonoTime(std::chrono::hours(24 * 30)) + offset;
      const MonoTime real = s.toReal(deadline);
      ASSERT_GE(s.toScaled(real), deadline) << "rate " << rate << " offset " << offset.count();
      ASSERT_LT(s.toScaled(real - 1ns), deadline) << "rate " << rate;
    }
  }
}

TEST(ClockScaleTest, ScaledTimeNeverGoesBackwards) {
  const ClockScale s(MonoTime(3s), 1.05);
  MonoTime last = s.toScaled(MonoTime(3s));
  for (auto t = MonoTime(3s); t < MonoTime(3s) + 20000ns; t += 1ns) {
    const MonoTime now = s.toScaled(t);
    ASSERT_GE(now, last);
    last = now;
  }
}

TEST(TestClockRateTest, OffUnlessBothVariablesAreSet) {
  EXPECT_EQ(parseTestClockRate(nullptr, nullptr).rate, 1.0);
  EXPECT_EQ(parseTestClockRate(nullptr, nullptr).message, "");
  EXPECT_EQ(parseTestClockRate("", "1").message, "");
  EXPECT_EQ(parseTestClockRate(nullptr, "1").rate, 1.0);
  for (const char* hooks : {static_cast<const char*>(nullptr), "", "0", "true", "yes", "11"}) {
    const auto r = parseTestClockRate("1.05", hooks);
    EXPECT_EQ(r.rate, 1.0) << (hooks ? hooks : "(unset)");
    EXPECT_NE(r.message.find("ignored"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("LEASEHOLD_TEST_HOOKS=1"), std::string::npos) << r.message;
  }
}

TEST(TestClockRateTest, ValidRateWithTheHookIsLoud) {
  const auto fast = parseTestClockRate("1.05", "1");
  EXPECT_EQ(fast.rate, 1.05);
  EXPECT_NE(fast.message.find("TEST HOOK ACTIVE"), std::string::npos) << fast.message;
  EXPECT_NE(fast.message.find("1.05x real time"), std::string::npos) << fast.message;
  EXPECT_EQ(parseTestClockRate("0.95", "1").rate, 0.95);
  EXPECT_EQ(parseTestClockRate("0.5", "1").rate, 0.5);
  EXPECT_EQ(parseTestClockRate("2", "1").rate, 2.0);
}

TEST(TestClockRateTest, InvalidRatesAreIgnoredWithAMessage) {
  for (const char* bad : {"fast", "1.05x", " ", "0", "-1", "0.49", "2.01", "nan", "inf", "1e400"}) {
    const auto r = parseTestClockRate(bad, "1");
    EXPECT_EQ(r.rate, 1.0) << bad;
    EXPECT_NE(r.message.find("ignored"), std::string::npos) << bad << ": " << r.message;
  }
}

TEST(AsioClockTest, ReadsTheEnvironmentOnlyWithTheHook) {
  boost::asio::io_context io;
  ::unsetenv("LEASEHOLD_TEST_HOOKS");
  ::setenv("LEASEHOLD_TEST_CLOCK_RATE", "1.05", 1);
  EXPECT_EQ(AsioClock(io).rate(), 1.0);
  ::setenv("LEASEHOLD_TEST_HOOKS", "1", 1);
#ifdef LEASEHOLD_NO_TEST_HOOKS
  EXPECT_EQ(AsioClock(io).rate(), 1.0);
#else
  EXPECT_EQ(AsioClock(io).rate(), 1.05);
#endif
  ::unsetenv("LEASEHOLD_TEST_HOOKS");
  ::unsetenv("LEASEHOLD_TEST_CLOCK_RATE");
  EXPECT_EQ(AsioClock(io).rate(), 1.0);
}

TEST(AsioClockTest, UnscaledClockIsBootTime) {
  boost::asio::io_context io;
  AsioClock clock(io);
  const MonoTime before = BootClock::now();
  const MonoTime now = clock.now();
  EXPECT_LE(before, now);
  EXPECT_LE(now, BootClock::now());
}

// Over the same real interval the scaled clock advances `rate` times as much.
TEST(AsioClockTest, NowRunsAtTheRate) {
  boost::asio::io_context io;
  for (double rate : {2.0, 0.5, 1.05}) {
    AsioClock clock(io, rate);
    const MonoTime r0 = BootClock::now();
    const MonoTime s0 = clock.now();
    std::this_thread::sleep_for(50ms);
    const MonoTime s1 = clock.now();
    const MonoTime r1 = BootClock::now();
    const double real = std::chrono::duration<double>(r1 - r0).count();
    const double scaled = std::chrono::duration<double>(s1 - s0).count();
    EXPECT_NEAR(scaled / real, rate, rate * 0.01) << "real " << real << " scaled " << scaled;
  }
}

// A timer armed at a scaled deadline fires at the matching real instant, and never before the
// scaled clock reads the deadline.
TEST(AsioClockTest, TimersFireAtTheScaledDeadline) {
  for (double rate : {2.0, 0.5}) {
    boost::asio::io_context io;
    AsioClock clock(io, rate);
    const auto scaledWait = rate > 1 ? 300ms : 60ms;  // 150 ms and 120 ms of real time
    const auto realWait = duration_cast<milliseconds>(scaledWait / rate);
    MonoTime firedAt{}, firedAtReal{};
    const MonoTime deadline = clock.now() + scaledWait;
    const MonoTime realStart = BootClock::now();
    auto timer = clock.makeTimer([&] {
      firedAt = clock.now();
      firedAtReal = BootClock::now();
    });
    timer->armAt(deadline);
    EXPECT_TRUE(timer->armed());
    io.run();
    EXPECT_FALSE(timer->armed());
    EXPECT_GE(firedAt, deadline) << "rate " << rate;
    const auto elapsed = duration_cast<milliseconds>(firedAtReal - realStart);
    EXPECT_GE(elapsed, realWait - 1ms) << "rate " << rate;
    // An unscaled timer would wait scaledWait: 300 ms for rate 2 (we expect 150), and a slow
    // clock must wait longer than the scaled duration (120 ms, not 60).
    if (rate > 1) {
      EXPECT_LT(elapsed, scaledWait) << "rate " << rate;
    } else {
      EXPECT_GT(elapsed, scaledWait) << "rate " << rate;
    }
  }
}

TEST(AsioClockTest, RearmAndDisarmWithAScaledClock) {
  boost::asio::io_context io;
  AsioClock clock(io, 1.05);
  int fired = 0;
  auto timer = clock.makeTimer([&] { ++fired; });
  timer->armAt(clock.now() + 10s);
  timer->armAt(clock.now() + 20ms);  // moves it
  auto other = clock.makeTimer([&] { fired += 100; });
  other->armAt(clock.now() + 10ms);
  other->disarm();
  EXPECT_FALSE(other->armed());
  io.run();
  EXPECT_EQ(fired, 1);
  // A deadline in the past fires at once.
  timer->armAt(clock.now() - 1s);
  io.restart();
  io.run();
  EXPECT_EQ(fired, 2);
}

}  // namespace
}  // namespace leasehold::runtime

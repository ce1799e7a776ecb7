#pragma once
// The production clock: CLOCK_BOOTTIME for time, timers on the daemon's one io_context.
//
// Test hook, clock-rate skew: a chaos test needs one replica whose monotonic clock runs a few
// percent fast or slow (two machines' oscillators never agree exactly). With BOTH
//   LEASEHOLD_TEST_HOOKS=1  and  LEASEHOLD_TEST_CLOCK_RATE=<rate in [0.5, 2]>
// in the environment, now() runs at `rate` times real time from the moment the clock is created
// (now = start + (real - start) * rate) and timers armed at such a deadline fire at the real
// instant that maps to it (never earlier). Wall time (timestamps in the Lease) is not scaled: it
// models an NTP-disciplined wall clock next to a drifting monotonic one.
// Why two variables: one stray variable (a copied manifest, a typo) can never skew a production
// clock; the rate alone is ignored with a warning, and an active hook prints a loud warning to
// stderr at start. A build compiled with -DLEASEHOLD_NO_TEST_HOOKS never reads either.
#include <boost/asio/io_context.hpp>
#include <string>

#include "time/Clock.h"

namespace leasehold::runtime {

// Maps real CLOCK_BOOTTIME readings to the clock's (possibly scaled) time and back.
class ClockScale {
 public:
  ClockScale() = default;
  ClockScale(time::MonoTime start, double rate) : start_(start), rate_(rate) {}
  double rate() const { return rate_; }
  bool identity() const { return rate_ == 1.0; }
  // Scaled time at real instant `real`: start + floor((real - start) * rate).
  time::MonoTime toScaled(time::MonoTime real) const;
  // The earliest real instant at which toScaled() reaches `scaled`.
  time::MonoTime toReal(time::MonoTime scaled) const;

 private:
  time::MonoTime start_{};
  double rate_ = 1.0;
};

// What the environment asks for. `rate` is 1 unless the hook is enabled and the value valid;
// `message` is what to print at start (empty when nothing was asked for).
struct TestClockRate {
  double rate = 1.0;
  std::string message;
};
// Pure: `rateValue` is LEASEHOLD_TEST_CLOCK_RATE, `hooksValue` LEASEHOLD_TEST_HOOKS (null when
// unset). Values out of [0.5, 2] or not a number are ignored with a message.
TestClockRate parseTestClockRate(const char* rateValue, const char* hooksValue);

class AsioClock : public time::Clock {
 public:
  // Real time, unless the test hook above is enabled in the environment (prints to stderr).
  explicit AsioClock(boost::asio::io_context& io);
  // Explicit rate, for tests (1.0 = real time).
  AsioClock(boost::asio::io_context& io, double rate);

  time::MonoTime now() const override {
    return scale_.identity() ? time::BootClock::now() : scale_.toScaled(time::BootClock::now());
  }
  time::WallTime wallNow() const override;
  std::unique_ptr<time::Timer> makeTimer(std::function<void()> onFire) override;
  // The rate the monotonic clock runs at (1.0 unless the test hook is active).
  double rate() const { return scale_.rate(); }

 private:
  boost::asio::io_context& io_;
  ClockScale scale_;
};

}  // namespace leasehold::runtime

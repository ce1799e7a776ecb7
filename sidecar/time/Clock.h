#pragma once
// The election core's only window on time. Production uses AsioClock (CLOCK_BOOTTIME timers on
// the event loop); tests use FakeClock, whose advance() fires due timers in deadline order.
#include <functional>
#include <memory>

#include "time/Time.h"

namespace leasehold::time {

// A one-shot timer. Arming an armed timer moves it; destroying it cancels it. The callback runs
// on the clock's thread and never re-entrantly from armAt().
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void armAt(MonoTime deadline) = 0;
  virtual void disarm() = 0;
  virtual bool armed() const = 0;
};

class Clock {
 public:
  virtual ~Clock() = default;
  virtual MonoTime now() const = 0;
  virtual WallTime wallNow() const = 0;
  virtual std::unique_ptr<Timer> makeTimer(std::function<void()> onFire) = 0;
};

}  // namespace leasehold::time

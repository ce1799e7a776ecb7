#pragma once
// A manual clock for tests: time moves only when the test says so.
#include <cstdint>
#include <map>
#include <set>

#include "time/Clock.h"

namespace leasehold::time {

class FakeClock : public Clock {
 public:
  FakeClock();
  ~FakeClock() override;

  MonoTime now() const override { return now_; }
  WallTime wallNow() const override;
  std::unique_ptr<Timer> makeTimer(std::function<void()> onFire) override;

  // Moves time forward by d, firing every timer that falls due on the way, in deadline order
  // (ties in arming order); the clock reads each timer's deadline while it fires.
  void advance(Duration d);
  // Moves time forward without running anything: a process that was paused (SIGSTOP, GC, a
  // frozen VM). Timers that fell due fire on the next advance().
  void jump(Duration d);
  // Fires whatever is due now.
  void runDue() { advance(Duration::zero()); }
  // Shifts the wall clock only (a machine whose clock is wrong); monotonic time is unaffected.
  void setWallOffset(Duration offset) { wallOffset_ = offset; }
  std::size_t armedTimers() const { return queue_.size(); }

 private:
  class FakeTimer;
  friend class FakeTimer;
  using Key = std::pair<MonoTime, std::uint64_t>;

  void arm(FakeTimer* timer, MonoTime deadline);
  void disarm(FakeTimer* timer);

  MonoTime now_;
  WallTime wallBase_;
  Duration wallOffset_{};
  std::uint64_t sequence_ = 0;
  std::map<Key, FakeTimer*> queue_;
};

}  // namespace leasehold::time

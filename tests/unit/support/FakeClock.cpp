#include "FakeClock.h"

#include <optional>

namespace leasehold::time {

class FakeClock::FakeTimer : public Timer {
 public:
  FakeTimer(FakeClock& clock, std::function<void()> onFire)
      : clock_(clock), onFire_(std::move(onFire)) {}
  ~FakeTimer() override { clock_.disarm(this); }
  void armAt(MonoTime deadline) override { clock_.arm(this, deadline); }
  void disarm() override { clock_.disarm(this); }
  bool armed() const override { return key_.has_value(); }

  FakeClock& clock_;
  std::function<void()> onFire_;
  std::optional<Key> key_;
};

// An arbitrary but fixed epoch keeps test output reproducible.
FakeClock::FakeClock()
    : now_(MonoTime(std::chrono::hours(1000))),
      wallBase_(std::chrono::sys_days(std::chrono::year(2026) / 11 / 30) + std::chrono::hours(10)) {
}

FakeClock::~FakeClock() {
  for (auto& [key, timer] : queue_)
    timer->key_.reset();
}

WallTime FakeClock::wallNow() const {
  return wallBase_ + std::chrono::duration_cast<std::chrono::microseconds>(
                         now_ - MonoTime(std::chrono::hours(1000)) + wallOffset_);
}

std::unique_ptr<Timer> FakeClock::makeTimer(std::function<void()> onFire) {
  return std::make_unique<FakeTimer>(*this, std::move(onFire));
}

void FakeClock::arm(FakeTimer* timer, MonoTime deadline) {
  disarm(timer);
  Key key{deadline, sequence_++};
  queue_.emplace(key, timer);
  timer->key_ = key;
}

void FakeClock::disarm(FakeTimer* timer) {
  if (!timer->key_) return;
  queue_.erase(*timer->key_);
  timer->key_.reset();
}

void FakeClock::advance(Duration d) {
  const MonoTime target = now_ + d;
  while (!queue_.empty() && queue_.begin()->first.first <= target) {
    auto it = queue_.begin();
    FakeTimer* timer = it->second;
    if (it->first.first > now_) now_ = it->first.first;
    queue_.erase(it);
    timer->key_.reset();
    // The callback may destroy or re-arm this or any other timer; nothing here touches it after.
    auto onFire = timer->onFire_;
    onFire();
  }
  if (target > now_) now_ = target;
}

void FakeClock::jump(Duration d) {
  now_ += d;
}

}  // namespace leasehold::time

#pragma once
// The production clock: CLOCK_BOOTTIME for time, timers on the daemon's one io_context.
#include <boost/asio/io_context.hpp>

#include "election/Clock.h"

namespace leasehold::election {

class AsioClock : public Clock {
 public:
  explicit AsioClock(boost::asio::io_context& io) : io_(io) {}
  MonoTime now() const override { return BootClock::now(); }
  WallTime wallNow() const override;
  std::unique_ptr<Timer> makeTimer(std::function<void()> onFire) override;

 private:
  boost::asio::io_context& io_;
};

}  // namespace leasehold::election

#include "election/AsioClock.h"

#include <boost/asio/basic_waitable_timer.hpp>

namespace leasehold::election {
namespace {

using BootTimer = boost::asio::basic_waitable_timer<BootClock>;

class AsioTimer : public Timer {
 public:
  AsioTimer(boost::asio::io_context& io, std::function<void()> onFire)
      : state_(std::make_shared<State>(io, std::move(onFire))) {}
  ~AsioTimer() override {
    state_->generation++;
    state_->timer.cancel();
  }

  void armAt(MonoTime deadline) override {
    const auto generation = ++state_->generation;
    state_->armed = true;
    state_->timer.expires_at(deadline);
    // The handler may outlive this object (cancel still runs it), so it holds the state alive
    // and checks that it is still the latest arming.
    state_->timer.async_wait([state = state_, generation](const boost::system::error_code& ec) {
      if (ec || state->generation != generation) return;
      state->armed = false;
      state->onFire();
    });
  }
  void disarm() override {
    state_->generation++;
    state_->armed = false;
    state_->timer.cancel();
  }
  bool armed() const override { return state_->armed; }

 private:
  struct State {
    State(boost::asio::io_context& io, std::function<void()> f) : timer(io), onFire(std::move(f)) {}
    BootTimer timer;
    std::function<void()> onFire;
    std::uint64_t generation = 0;
    bool armed = false;
  };
  std::shared_ptr<State> state_;
};

}  // namespace

WallTime AsioClock::wallNow() const {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

std::unique_ptr<Timer> AsioClock::makeTimer(std::function<void()> onFire) {
  return std::make_unique<AsioTimer>(io_, std::move(onFire));
}

}  // namespace leasehold::election

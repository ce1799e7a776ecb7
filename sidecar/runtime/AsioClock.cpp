#include "runtime/AsioClock.h"

#include <boost/asio/basic_waitable_timer.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace leasehold::runtime {
namespace {

using BootTimer = boost::asio::basic_waitable_timer<time::BootClock>;

class AsioTimer : public time::Timer {
 public:
  AsioTimer(boost::asio::io_context& io, ClockScale scale, std::function<void()> onFire)
      : state_(std::make_shared<State>(io, scale, std::move(onFire))) {}
  ~AsioTimer() override {
    state_->generation++;
    state_->timer.cancel();
  }

  void armAt(time::MonoTime deadline) override {
    const auto generation = ++state_->generation;
    state_->armed = true;
    wait(state_, generation, deadline);
  }
  void disarm() override {
    state_->generation++;
    state_->armed = false;
    state_->timer.cancel();
  }
  bool armed() const override { return state_->armed; }

 private:
  struct State {
    State(boost::asio::io_context& io, ClockScale s, std::function<void()> f)
        : timer(io), scale(s), onFire(std::move(f)) {}
    BootTimer timer;
    ClockScale scale;
    std::function<void()> onFire;
    std::uint64_t generation = 0;
    bool armed = false;
  };

  // `deadline` is in the clock's time; the asio timer runs on real CLOCK_BOOTTIME.
  static void wait(const std::shared_ptr<State>& state, std::uint64_t generation,
                   time::MonoTime deadline) {
    state->timer.expires_at(state->scale.identity() ? deadline : state->scale.toReal(deadline));
    // The handler may outlive the AsioTimer (cancel still runs it), so it holds the state alive
    // and checks that it is still the latest arming.
    state->timer.async_wait([state, generation, deadline](const boost::system::error_code& ec) {
      if (ec || state->generation != generation) return;
      // A scaled timer never fires before the clock reads its deadline (toReal rounds up; this
      // only guards against a rounding surprise).
      if (!state->scale.identity() && state->scale.toScaled(time::BootClock::now()) < deadline) {
        wait(state, generation, deadline);
        return;
      }
      state->armed = false;
      state->onFire();
    });
  }

  std::shared_ptr<State> state_;
};

}  // namespace

time::MonoTime ClockScale::toScaled(time::MonoTime real) const {
  if (identity()) return real;
  const long double offset = static_cast<long double>((real - start_).count());
  return start_ + time::Duration(static_cast<time::Duration::rep>(std::floor(offset * rate_)));
}

time::MonoTime ClockScale::toReal(time::MonoTime scaled) const {
  if (identity()) return scaled;
  const long double offset = static_cast<long double>((scaled - start_).count());
  time::MonoTime real =
      start_ + time::Duration(static_cast<time::Duration::rep>(std::ceil(offset / rate_)));
  // Exact to the nanosecond despite floating point: the earliest real instant that maps to
  // at least `scaled` (each loop runs at most a step or two).
  while (toScaled(real) < scaled)
    real += time::Duration(1);
  while (toScaled(real - time::Duration(1)) >= scaled)
    real -= time::Duration(1);
  return real;
}

TestClockRate parseTestClockRate(const char* rateValue, const char* hooksValue) {
  if (rateValue == nullptr || *rateValue == '\0') return {};
  const std::string shown = std::string("LEASEHOLD_TEST_CLOCK_RATE=") + rateValue;
  if (hooksValue == nullptr || std::strcmp(hooksValue, "1") != 0) {
    return {1.0, "leasehold: warning: " + shown +
                     " ignored: it is a test hook and needs LEASEHOLD_TEST_HOOKS=1 as well; the "
                     "clock runs at real time"};
  }
  char* end = nullptr;
  const double rate = std::strtod(rateValue, &end);
  if (end == rateValue || *end != '\0' || !std::isfinite(rate) || rate < 0.5 || rate > 2.0) {
    return {1.0, "leasehold: WARNING: TEST HOOK: " + shown +
                     " is not a number in [0.5, 2]: ignored, the clock runs at real time"};
  }
  char rateText[32];
  std::snprintf(rateText, sizeof rateText, "%g", rate);
  return {rate, "leasehold: WARNING: TEST HOOK ACTIVE (LEASEHOLD_TEST_HOOKS=1): " + shown +
                    ": the monotonic clock runs at " + rateText +
                    "x real time. This is for chaos tests only; never set LEASEHOLD_TEST_HOOKS "
                    "in production."};
}

namespace {

double rateFromEnvironment() {
#ifdef LEASEHOLD_NO_TEST_HOOKS
  return 1.0;
#else
  const TestClockRate r = parseTestClockRate(std::getenv("LEASEHOLD_TEST_CLOCK_RATE"),
                                             std::getenv("LEASEHOLD_TEST_HOOKS"));
  if (!r.message.empty()) std::fprintf(stderr, "%s\n", r.message.c_str());
  return r.rate;
#endif
}

}  // namespace

AsioClock::AsioClock(boost::asio::io_context& io) : AsioClock(io, rateFromEnvironment()) {}

AsioClock::AsioClock(boost::asio::io_context& io, double rate)
    : io_(io), scale_(time::BootClock::now(), rate) {}

time::WallTime AsioClock::wallNow() const {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

std::unique_ptr<time::Timer> AsioClock::makeTimer(std::function<void()> onFire) {
  return std::make_unique<AsioTimer>(io_, scale_, std::move(onFire));
}

}  // namespace leasehold::runtime

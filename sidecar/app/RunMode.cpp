#include "app/RunMode.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

namespace leasehold::app {

std::variant<std::unique_ptr<RunMode>, std::string> RunMode::start(
    boost::asio::io_context& io, time::Clock& clock, supervise::SupervisorConfig config,
    const log::Logger& logger, const std::string& executable) {
  if (::access(executable.c_str(), X_OK) != 0) {
    return "cannot start the watchdog: " + executable + ": " + std::strerror(errno);
  }
  // A watchdog that dies before the reaper listens is still found: the constructor reaps once.
  auto started = supervise::Watchdog::start(executable);
  if (!started.watchdog) return started.problem;
  return std::unique_ptr<RunMode>(
      new RunMode(io, clock, std::move(config), logger, std::move(started.watchdog)));
}

RunMode::RunMode(boost::asio::io_context& io, time::Clock& clock,
                 supervise::SupervisorConfig config, const log::Logger& logger,
                 std::unique_ptr<supervise::Watchdog> watchdog)
    : io_(io),
      logger_(logger),
      reaper_(io),
      watchdog_(std::move(watchdog)),
      launcher_(clock, reaper_, *watchdog_, config.killGrace),
      supervisor_(clock, launcher_, config,
                  {[this] {
                     post([this] {
                       if (auto ready = std::move(releaseReady_)) ready();
                     });
                   },
                   [this](int code) { finished(code); }},
                  logger) {
  // Without the watchdog a paused supervisor could not stop its command: end run mode.
  reaper_.watch(watchdog_->pid(),
                {nullptr, [this](supervise::ExitStatus s) {
                   supervisor_.abort("the watchdog exited (" + s.describe() + ")");
                 }});
  // Orphans that exited before the reaper listened.
  reaper_.reapNow();
}

RunMode::~RunMode() {
  reaper_.unwatch(watchdog_->pid());
}

void RunMode::post(std::function<void()> f) {
  std::weak_ptr<char> alive = alive_;
  boost::asio::post(io_, [alive, f = std::move(f)] {
    if (!alive.expired()) f();
  });
}

CommandPort RunMode::port() {
  return CommandPort{
      [this](std::int64_t token, time::MonoTime validUntil) {
        supervisor_.leading(token, validUntil);
      },
      [this] { supervisor_.lost(); },
      [this](std::function<void()> ready) {
        releaseReady_ = std::move(ready);
        supervisor_.release();
      },
      [this](std::function<void()> ready) {
        shutdownReady_ = std::move(ready);
        if (supervisor_.finished()) {
          post([this] {
            if (auto r = std::move(shutdownReady_)) r();
          });
          return;
        }
        supervisor_.shutdown(signal_ != 0 ? signal_ : SIGTERM);
      },
  };
}

void RunMode::finished(int code) {
  exitCode_ = code;
  post([this] {
    if (auto ready = std::move(shutdownReady_)) return ready();
    if (shutdownRequest_) shutdownRequest_();
  });
}

bool RunMode::secondSignal(int signo) {
  if (supervisor_.finished()) return false;
  supervisor_.shutdown(signo);
  return true;
}

}  // namespace leasehold::app

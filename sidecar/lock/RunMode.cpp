#include "lock/RunMode.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "supervise/ChildReaper.h"
#include "supervise/PosixProcessLauncher.h"
#include "supervise/Watchdog.h"

namespace leasehold::lock {

// The reaper, the watchdog and the launcher on them (declared in that order: the launcher goes
// first, the reaper last).
struct RunMode::Processes {
  supervise::ChildReaper reaper;
  std::unique_ptr<supervise::Watchdog> watchdog;
  supervise::PosixProcessLauncher launcher;

  Processes(boost::asio::io_context& io, time::Clock& clock, std::unique_ptr<supervise::Watchdog> w,
            time::Duration killGrace)
      : reaper(io), watchdog(std::move(w)), launcher(clock, reaper, *watchdog, killGrace) {}
};

std::variant<std::unique_ptr<RunMode>, std::string> RunMode::start(
    boost::asio::io_context& io, time::Clock& clock, supervise::SupervisorConfig config,
    const log::Logger& logger, const std::string& executable) {
  if (::access(executable.c_str(), X_OK) != 0) {
    return "cannot start the watchdog: " + executable + ": " + std::strerror(errno);
  }
  // A watchdog that dies before the reaper listens is still found: the constructor reaps once.
  auto started = supervise::Watchdog::start(executable);
  if (!started.watchdog) return started.problem;
  auto processes =
      std::make_unique<Processes>(io, clock, std::move(started.watchdog), config.killGrace);
  supervise::ProcessLauncher& launcher = processes->launcher;
  return std::unique_ptr<RunMode>(
      new RunMode(io, clock, std::move(config), launcher, logger, std::move(processes)));
}

RunMode::RunMode(boost::asio::io_context& io, time::Clock& clock,
                 supervise::SupervisorConfig config, supervise::ProcessLauncher& launcher,
                 const log::Logger& logger)
    : RunMode(io, clock, std::move(config), launcher, logger, nullptr) {}

RunMode::RunMode(boost::asio::io_context& io, time::Clock& clock,
                 supervise::SupervisorConfig config, supervise::ProcessLauncher& launcher,
                 const log::Logger& logger, std::unique_ptr<Processes> processes)
    : io_(io),
      logger_(logger),
      processes_(std::move(processes)),
      supervisor_(clock, launcher, std::move(config),
                  {[this] {
                     post([this] {
                       if (auto ready = std::move(releaseReady_)) ready();
                     });
                   },
                   [this](int code) { finished(code); }},
                  logger) {
  if (!processes_) return;
  // Without the watchdog a paused supervisor could not stop its command: end run mode.
  processes_->reaper.watch(processes_->watchdog->pid(),
                           {nullptr, [this](supervise::ExitStatus s) {
                              supervisor_.abort("the watchdog exited (" + s.describe() + ")");
                            }});
  // Orphans that exited before the reaper listened.
  processes_->reaper.reapNow();
}

RunMode::~RunMode() {
  if (processes_) processes_->reaper.unwatch(processes_->watchdog->pid());
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
        beginShutdown(SIGTERM);
        // Not shutdown() again: that is the second signal's SIGKILL. finished() runs `ready`
        // if the Supervisor is not done yet.
        if (supervisor_.finished()) {
          post([this] {
            if (auto r = std::move(shutdownReady_)) r();
          });
        }
      },
  };
}

void RunMode::beginShutdown(int signo) {
  if (shuttingDown_) return;
  shuttingDown_ = true;
  // An idle Supervisor finishes inside this call (finished() runs, and asks for nothing).
  supervisor_.shutdown(signo != 0 ? signo : SIGTERM);
}

void RunMode::finished(int code) {
  exitCode_ = code;
  // Done on its own, not by the way out: the caller's shutdown sequence runs. Not when the way
  // out caused it: that sequence is running already.
  const bool onItsOwn = !shuttingDown_;
  shuttingDown_ = true;
  post([this, onItsOwn] {
    if (auto ready = std::move(shutdownReady_)) return ready();
    if (onItsOwn && shutdownRequest_) shutdownRequest_();
  });
}

bool RunMode::secondSignal(int signo) {
  if (supervisor_.finished()) return false;
  supervisor_.shutdown(signo);
  return true;
}

}  // namespace leasehold::lock

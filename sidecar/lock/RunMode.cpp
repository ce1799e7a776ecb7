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

// One ChildReaper and one watchdog for every command, and each command's PosixProcessLauncher on
// them (declared in that order: the launchers go first, the reaper last).
struct RunMode::Processes {
  supervise::ChildReaper reaper;
  std::unique_ptr<supervise::Watchdog> watchdog;
  std::vector<std::unique_ptr<supervise::PosixProcessLauncher>> launchers;

  Processes(boost::asio::io_context& io, std::unique_ptr<supervise::Watchdog> w)
      : reaper(io), watchdog(std::move(w)) {}
};

struct RunMode::Supervised {
  log::Logger logger;  // the Supervisor keeps a reference
  supervise::Supervisor supervisor;
  std::function<void()> releaseReady;
  std::function<void()> shutdownReady;

  Supervised(time::Clock& clock, supervise::ProcessLauncher& launcher,
             supervise::SupervisorConfig config, supervise::SupervisorHooks hooks, log::Logger l)
      : logger(std::move(l)),
        supervisor(clock, launcher, std::move(config), std::move(hooks), logger) {}
};

std::variant<std::unique_ptr<RunMode>, std::string> RunMode::start(boost::asio::io_context& io,
                                                                   time::Clock& clock,
                                                                   std::vector<Command> commands,
                                                                   const log::Logger& logger,
                                                                   const std::string& executable) {
  if (::access(executable.c_str(), X_OK) != 0) {
    return "cannot start the watchdog: " + executable + ": " + std::strerror(errno);
  }
  // A watchdog that dies before the reaper listens is still found: the constructor reaps once.
  auto started = supervise::Watchdog::start(executable);
  if (!started.watchdog) return started.problem;
  auto processes = std::make_unique<Processes>(io, std::move(started.watchdog));
  std::vector<supervise::ProcessLauncher*> launchers;
  for (const Command& c : commands) {
    processes->launchers.push_back(std::make_unique<supervise::PosixProcessLauncher>(
        clock, processes->reaper, *processes->watchdog, c.config.killGrace));
    launchers.push_back(processes->launchers.back().get());
  }
  return std::unique_ptr<RunMode>(
      new RunMode(io, clock, std::move(commands), launchers, logger, std::move(processes)));
}

RunMode::RunMode(boost::asio::io_context& io, time::Clock& clock, std::vector<Command> commands,
                 const std::vector<supervise::ProcessLauncher*>& launchers,
                 const log::Logger& logger)
    : RunMode(io, clock, std::move(commands), launchers, logger, nullptr) {}

RunMode::RunMode(boost::asio::io_context& io, time::Clock& clock, std::vector<Command> commands,
                 const std::vector<supervise::ProcessLauncher*>& launchers,
                 const log::Logger& logger, std::unique_ptr<Processes> processes)
    : io_(io), logger_(logger), processes_(std::move(processes)) {
  commands_.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); i++) {
    supervise::SupervisorHooks hooks{[this, i] {
                                       post([this, i] {
                                         if (auto r = std::move(commands_[i]->releaseReady)) r();
                                       });
                                     },
                                     [this, i](int code) { finished(i, code); }};
    commands_.push_back(
        std::make_unique<Supervised>(clock, *launchers.at(i), std::move(commands[i].config),
                                     std::move(hooks), logger_.with(commands[i].logFields)));
  }
  if (!processes_) return;
  // Without the watchdog a paused supervisor could not stop its commands: end run mode.
  processes_->reaper.watch(processes_->watchdog->pid(),
                           {nullptr, [this](supervise::ExitStatus s) {
                              watchdogExited("the watchdog exited (" + s.describe() + ")");
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

CommandPort RunMode::port(std::size_t i) {
  Supervised* s = commands_.at(i).get();
  return CommandPort{
      [s](std::int64_t token, time::MonoTime validUntil) {
        s->supervisor.leading(token, validUntil);
      },
      [s] { s->supervisor.lost(); },
      [s](std::function<void()> ready) {
        s->releaseReady = std::move(ready);
        s->supervisor.release();
      },
      [this, s](std::function<void()> ready) {
        s->shutdownReady = std::move(ready);
        beginShutdown(SIGTERM);
        // Not shutdown() again: that is the second signal's SIGKILL. finished() runs `ready`
        // if the Supervisor is not done yet.
        if (s->supervisor.finished()) {
          post([s] {
            if (auto r = std::move(s->shutdownReady)) r();
          });
        }
      },
  };
}

void RunMode::beginShutdown(int signo) {
  if (shuttingDown_) return;
  shuttingDown_ = true;
  // At once, not when each Sidecar shuts down: see the header. Idle Supervisors finish
  // inside this loop (finished() runs, and asks for nothing more).
  for (auto& s : commands_)
    s->supervisor.shutdown(signo != 0 ? signo : SIGTERM);
}

void RunMode::finished(std::size_t i, int code) {
  if (exitCode_ == 0) exitCode_ = code;
  // Done on its own, not by the way out: that begins now, here, and not in a posted handler,
  // so that no other Supervisor starts a command meanwhile.
  const bool onItsOwn = !shuttingDown_;
  beginShutdown(SIGTERM);
  post([this, i, onItsOwn] {
    if (auto ready = std::move(commands_[i]->shutdownReady)) return ready();
    // The whole process goes (Kubernetes or systemd starts it again).
    if (onItsOwn && shutdownRequest_) shutdownRequest_();
  });
}

void RunMode::watchdogExited(const std::string& why) {
  // Killed, not drained: every Supervisor hears the abort before a shutdown could reach it (the
  // first one to finish would otherwise begin the way out: a SIGTERM just before the SIGKILL).
  const bool first = !shuttingDown_;
  shuttingDown_ = true;
  for (auto& c : commands_)
    c->supervisor.abort(why);
  if (!first) return;
  post([this] {
    if (shutdownRequest_) shutdownRequest_();
  });
}

bool RunMode::secondSignal(int signo) {
  bool any = false;
  for (auto& s : commands_) {
    if (s->supervisor.finished()) continue;
    s->supervisor.shutdown(signo);
    any = true;
  }
  return any;
}

std::size_t RunMode::commandsRunning() const {
  std::size_t n = 0;
  for (const auto& s : commands_)
    n += s->supervisor.commandRunning() ? 1 : 0;
  return n;
}

}  // namespace leasehold::lock

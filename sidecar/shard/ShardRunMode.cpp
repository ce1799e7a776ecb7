#include "shard/ShardRunMode.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "supervise/ChildReaper.h"
#include "supervise/PosixProcessLauncher.h"
#include "supervise/Watchdog.h"

namespace leasehold::shard {

// One ChildReaper and one watchdog for every shard, and each shard's PosixProcessLauncher on
// them (declared in that order: the launchers go first, the reaper last).
struct ShardRunMode::Processes {
  supervise::ChildReaper reaper;
  std::unique_ptr<supervise::Watchdog> watchdog;
  std::vector<std::unique_ptr<supervise::PosixProcessLauncher>> launchers;

  Processes(boost::asio::io_context& io, std::unique_ptr<supervise::Watchdog> w)
      : reaper(io), watchdog(std::move(w)) {}
};

struct ShardRunMode::Shard {
  log::Logger logger;  // the Supervisor keeps a reference
  supervise::Supervisor supervisor;
  std::function<void()> releaseReady;
  std::function<void()> shutdownReady;

  Shard(time::Clock& clock, supervise::ProcessLauncher& launcher,
        supervise::SupervisorConfig config, supervise::SupervisorHooks hooks, log::Logger l)
      : logger(std::move(l)),
        supervisor(clock, launcher, std::move(config), std::move(hooks), logger) {}
};

std::variant<std::unique_ptr<ShardRunMode>, std::string> ShardRunMode::start(
    boost::asio::io_context& io, time::Clock& clock, supervise::SupervisorConfig base,
    const std::string& leaseNamespace, const std::string& group, std::size_t shards,
    const log::Logger& logger, const std::string& executable) {
  if (::access(executable.c_str(), X_OK) != 0) {
    return "cannot start the watchdog: " + executable + ": " + std::strerror(errno);
  }
  auto started = supervise::Watchdog::start(executable);
  if (!started.watchdog) return started.problem;
  auto processes = std::make_unique<Processes>(io, std::move(started.watchdog));
  std::vector<supervise::ProcessLauncher*> launchers;
  for (std::size_t i = 0; i < shards; i++) {
    processes->launchers.push_back(std::make_unique<supervise::PosixProcessLauncher>(
        clock, processes->reaper, *processes->watchdog, base.killGrace));
    launchers.push_back(processes->launchers.back().get());
  }
  return std::unique_ptr<ShardRunMode>(new ShardRunMode(
      io, clock, std::move(base), leaseNamespace, group, launchers, logger, std::move(processes)));
}

ShardRunMode::ShardRunMode(boost::asio::io_context& io, time::Clock& clock,
                           supervise::SupervisorConfig base, const std::string& leaseNamespace,
                           const std::string& group,
                           const std::vector<supervise::ProcessLauncher*>& launchers,
                           const log::Logger& logger)
    : ShardRunMode(io, clock, std::move(base), leaseNamespace, group, launchers, logger, nullptr) {}

ShardRunMode::ShardRunMode(boost::asio::io_context& io, time::Clock& clock,
                           supervise::SupervisorConfig base, const std::string& leaseNamespace,
                           const std::string& group,
                           const std::vector<supervise::ProcessLauncher*>& launchers,
                           const log::Logger& logger, std::unique_ptr<Processes> processes)
    : io_(io), logger_(logger), processes_(std::move(processes)) {
  const std::size_t shards = launchers.size();
  shards_.reserve(shards);
  for (std::size_t i = 0; i < shards; i++) {
    supervise::SupervisorConfig c = base;
    c.lease = leaseNamespace + "/" + group + "-" + std::to_string(i);
    c.extraEnv = {{"LEASEHOLD_SHARD", std::to_string(i)},
                  {"LEASEHOLD_SHARDS", std::to_string(shards)}};
    // A shard moved away by rebalancing is released, not lost.
    c.exitOnRelease = false;
    supervise::SupervisorHooks hooks{[this, i] {
                                       post([this, i] {
                                         if (auto r = std::move(shards_[i]->releaseReady)) r();
                                       });
                                     },
                                     [this, i](int code) { finished(i, code); }};
    shards_.push_back(std::make_unique<Shard>(clock, *launchers[i], std::move(c), std::move(hooks),
                                              logger_.with({{"shard", std::to_string(i)}})));
  }
  if (!processes_) return;
  // Without the watchdog a paused supervisor could not stop its commands: end run mode.
  processes_->reaper.watch(processes_->watchdog->pid(),
                           {nullptr, [this](supervise::ExitStatus s) {
                              watchdogExited("the watchdog exited (" + s.describe() + ")");
                            }});
  processes_->reaper.reapNow();
}

ShardRunMode::~ShardRunMode() {
  if (processes_) processes_->reaper.unwatch(processes_->watchdog->pid());
}

void ShardRunMode::post(std::function<void()> f) {
  std::weak_ptr<char> alive = alive_;
  boost::asio::post(io_, [alive, f = std::move(f)] {
    if (!alive.expired()) f();
  });
}

lock::CommandPort ShardRunMode::port(std::size_t i) {
  Shard* s = shards_.at(i).get();
  return lock::CommandPort{
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

void ShardRunMode::beginShutdown(int signo) {
  if (shuttingDown_) return;
  shuttingDown_ = true;
  // At once, not when each shard's Sidecar shuts down: see the header. Idle Supervisors finish
  // inside this loop (finished() runs, and asks for nothing more).
  for (auto& s : shards_)
    s->supervisor.shutdown(signo != 0 ? signo : SIGTERM);
}

void ShardRunMode::finished(std::size_t i, int code) {
  if (exitCode_ == 0) exitCode_ = code;
  // Done on its own, not by the way out: that begins now, here, and not in a posted handler,
  // so that no other shard starts a command meanwhile.
  const bool onItsOwn = !shuttingDown_;
  beginShutdown(SIGTERM);
  post([this, i, onItsOwn] {
    if (auto ready = std::move(shards_[i]->shutdownReady)) return ready();
    // The whole process goes (Kubernetes restarts the container).
    if (onItsOwn && shutdownRequest_) shutdownRequest_();
  });
}

void ShardRunMode::watchdogExited(const std::string& why) {
  // Killed, not drained: every Supervisor hears the abort before a shutdown could reach it (the
  // first one to finish would otherwise begin the way out: a SIGTERM just before the SIGKILL).
  const bool first = !shuttingDown_;
  shuttingDown_ = true;
  for (auto& shard : shards_)
    shard->supervisor.abort(why);
  if (!first) return;
  post([this] {
    if (shutdownRequest_) shutdownRequest_();
  });
}

bool ShardRunMode::secondSignal(int signo) {
  bool any = false;
  for (auto& s : shards_) {
    if (s->supervisor.finished()) continue;
    s->supervisor.shutdown(signo);
    any = true;
  }
  return any;
}

std::size_t ShardRunMode::commandsRunning() const {
  std::size_t n = 0;
  for (const auto& s : shards_)
    n += s->supervisor.commandRunning() ? 1 : 0;
  return n;
}

}  // namespace leasehold::shard

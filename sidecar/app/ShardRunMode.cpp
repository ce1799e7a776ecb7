#include "app/ShardRunMode.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

namespace leasehold::app {

struct ShardRunMode::Shard {
  log::Logger logger;  // the Supervisor keeps a reference
  supervise::PosixProcessLauncher launcher;
  supervise::Supervisor supervisor;
  std::function<void()> releaseReady;
  std::function<void()> shutdownReady;

  Shard(time::Clock& clock, supervise::ChildReaper& reaper, supervise::Watchdog& watchdog,
        supervise::SupervisorConfig config, supervise::SupervisorHooks hooks, log::Logger l)
      : logger(std::move(l)),
        launcher(clock, reaper, watchdog, config.killGrace),
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
  return std::unique_ptr<ShardRunMode>(new ShardRunMode(io, clock, std::move(base), leaseNamespace,
                                                        group, shards, logger,
                                                        std::move(started.watchdog)));
}

ShardRunMode::ShardRunMode(boost::asio::io_context& io, time::Clock& clock,
                           supervise::SupervisorConfig base, const std::string& leaseNamespace,
                           const std::string& group, std::size_t shards, const log::Logger& logger,
                           std::unique_ptr<supervise::Watchdog> watchdog)
    : io_(io), logger_(logger), reaper_(io), watchdog_(std::move(watchdog)) {
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
    shards_.push_back(std::make_unique<Shard>(clock, reaper_, *watchdog_, std::move(c),
                                              std::move(hooks),
                                              logger_.with({{"shard", std::to_string(i)}})));
  }
  // Without the watchdog a paused supervisor could not stop its commands: end run mode.
  reaper_.watch(watchdog_->pid(),
                {nullptr, [this](supervise::ExitStatus s) {
                   for (auto& shard : shards_)
                     shard->supervisor.abort("the watchdog exited (" + s.describe() + ")");
                 }});
  reaper_.reapNow();
}

ShardRunMode::~ShardRunMode() {
  reaper_.unwatch(watchdog_->pid());
}

void ShardRunMode::post(std::function<void()> f) {
  std::weak_ptr<char> alive = alive_;
  boost::asio::post(io_, [alive, f = std::move(f)] {
    if (!alive.expired()) f();
  });
}

CommandPort ShardRunMode::port(std::size_t i) {
  Shard* s = shards_.at(i).get();
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
        if (s->supervisor.finished()) {
          post([s] {
            if (auto r = std::move(s->shutdownReady)) r();
          });
          return;
        }
        s->supervisor.shutdown(signal_ != 0 ? signal_ : SIGTERM);
      },
  };
}

void ShardRunMode::finished(std::size_t i, int code) {
  if (exitCode_ == 0) exitCode_ = code;
  post([this, i] {
    if (auto ready = std::move(shards_[i]->shutdownReady)) return ready();
    // Done on its own: the whole process goes (Kubernetes restarts the container), once.
    if (shutdownRequested_) return;
    shutdownRequested_ = true;
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

}  // namespace leasehold::app

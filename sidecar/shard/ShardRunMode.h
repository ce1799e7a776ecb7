#pragma once
// Run mode with --shards N (`leasehold run --shards N -- CMD`): one supervise::Supervisor and
// PosixProcessLauncher per shard, each behind that shard's Sidecar as its CommandPort, so every
// owned shard runs one CMD with LEASEHOLD_SHARD=i, LEASEHOLD_SHARDS=N, LEASEHOLD_LEASE=ns/NAME-i
// and the shard's LEASEHOLD_FENCING_TOKEN, stopped by run mode's rules before the shard can
// pass (renewals failing, moved away by rebalancing: the release waits for the group to exit).
//
// One ChildReaper for all of them (it owns SIGCHLD and the subreaper role and dispatches by
// pid and process group) and ONE watchdog process guarding every shard's group at its own
// kill instant (WatchdogGuards); when the supervisor vanishes it kills them all.
//
// The way out begins at the first SIGTERM/SIGINT (noteSignal) or when the first Supervisor is
// done on its own (its command ended with --restart never, a lost shard with --exit-on-loss):
// at that instant every shard's Supervisor is shut down, all at once. An idle one is done and
// never starts a command again; a running one drains (the signal, SIGTERM when there is none,
// while renewals go on; --drain-timeout; SIGKILL at its kill instant). It cannot wait for the
// shards' Sidecars: the shard group's shutdown (ShardMode::shutdown) first deletes the
// membership Lease, an API round trip, during which a shard's Elector may still acquire or lead
// a shard, and only then shuts each Sidecar down. Its CommandPort's stopForShutdown therefore
// stops nothing (a second shutdown() would be the second signal's SIGKILL): it waits for the
// shard's Supervisor to be done, then the shard is released. A Supervisor done on its own also
// asks for the shutdown of the whole process (setShutdownRequest), once. If the watchdog dies,
// every command is killed at once (Supervisor::abort), none drained, and the process goes the
// same way. A second signal SIGKILLs every group still running. Exit status: the first non-zero
// code a Supervisor finished with (in time order), else 0.
//
// lock::RunMode is the same wiring for the single Lease; it stays separate so that the one-Lease
// run mode is exactly what it was.
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "lock/Sidecar.h"
#include "log/Logger.h"
#include "supervise/ProcessLauncher.h"
#include "supervise/Supervisor.h"
#include "time/Clock.h"

namespace leasehold::shard {

class ShardRunMode {
 public:
  // base: run mode's settings (command, identity, grace, drain, restart, exit-on-loss); lease
  // and the shard's environment are filled in per shard from `leaseNamespace`/`group`-i.
  // Makes this process a child subreaper and starts the watchdog (`executable __watchdog`);
  // the problem when it cannot.
  static std::variant<std::unique_ptr<ShardRunMode>, std::string> start(
      boost::asio::io_context& io, time::Clock& clock, supervise::SupervisorConfig base,
      const std::string& leaseNamespace, const std::string& group, std::size_t shards,
      const log::Logger& logger, const std::string& executable = "/proc/self/exe");
  // The same rules without real processes (the unit tests' way in): shard i's command goes
  // through launchers[i] (each outlives this object); no reaper, no watchdog.
  ShardRunMode(boost::asio::io_context& io, time::Clock& clock, supervise::SupervisorConfig base,
               const std::string& leaseNamespace, const std::string& group,
               const std::vector<supervise::ProcessLauncher*>& launchers,
               const log::Logger& logger);
  ~ShardRunMode();
  ShardRunMode(const ShardRunMode&) = delete;
  ShardRunMode& operator=(const ShardRunMode&) = delete;

  // Shard i's command, for its Sidecar. Its stopForShutdown begins the way out if nothing has
  // (no caller does that: the signal or a finished Supervisor comes first) and runs `ready`
  // once that shard's Supervisor is done.
  lock::CommandPort port(std::size_t shard);
  // A Supervisor is done on its own: the caller runs the shutdown sequence (ShardMode::shutdown).
  void setShutdownRequest(std::function<void()> f) { shutdownRequest_ = std::move(f); }
  // The first SIGTERM/SIGINT: every command drains from now on, with this signal. Nothing when
  // the way out has begun already.
  void noteSignal(int signo) { beginShutdown(signo); }
  // A second signal: SIGKILL to every group still running (then the releases). false when no
  // command is left to stop (the caller exits at once).
  bool secondSignal(int signo);
  int exitCode() const { return exitCode_; }
  std::size_t commandsRunning() const;

 private:
  struct Processes;
  struct Shard;
  ShardRunMode(boost::asio::io_context& io, time::Clock& clock, supervise::SupervisorConfig base,
               const std::string& leaseNamespace, const std::string& group,
               const std::vector<supervise::ProcessLauncher*>& launchers, const log::Logger& logger,
               std::unique_ptr<Processes> processes);
  void post(std::function<void()> f);
  // Every Supervisor's shutdown(signo), once: the way out has begun.
  void beginShutdown(int signo);
  void finished(std::size_t shard, int code);
  void watchdogExited(const std::string& why);

  boost::asio::io_context& io_;
  const log::Logger& logger_;
  // The real process side (null in unit tests); destroyed after the Supervisors that use it.
  std::unique_ptr<Processes> processes_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::function<void()> shutdownRequest_;
  bool shuttingDown_ = false;
  int exitCode_ = 0;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::shard

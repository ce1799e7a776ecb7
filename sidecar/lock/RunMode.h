#pragma once
// Run mode's wiring (`leasehold run [flags] -- CMD`, and with --shards N one command per owned
// shard): one supervise::Supervisor per command on the real process side (a PosixProcessLauncher
// each, ONE ChildReaper and ONE watchdog process for all), each presented to its lock's Sidecar as
// its CommandPort, plus the way out: the exit code, and a shutdown a Supervisor asks for itself
// (its command ended with --restart never, a lost term with --exit-on-loss, the watchdog died).
// One lock runs one command; a shard group one per shard (shard::shardCommands says how each
// differs: LEASEHOLD_SHARD, the shard's lease, a release that is not a loss).
//
// The ChildReaper owns SIGCHLD and the subreaper role and dispatches by pid and process group;
// the watchdog guards every command's group at its own kill instant (WatchdogGuards) and kills
// them all when the supervisor vanishes. What a Supervisor decides reaches its Sidecar posted to
// the loop, never from inside the elector event that caused it: the Sidecar's continuation may
// call into the elector.
//
// The way out begins at the first SIGTERM/SIGINT (noteSignal) or when the first Supervisor is
// done on its own, and at that instant every Supervisor is shut down, all at once: an idle one
// is done and never starts a command again; a running one drains (the signal while renewals go
// on; --drain-timeout; SIGKILL at its kill instant). Not when each Sidecar shuts down: the
// shutdown sequence first makes an API round trip (--coordinated deletes the LeaseCandidate; a
// shard group deletes its membership Lease) in which an Elector may still acquire, and a
// Supervisor not yet told would start its command after the signal. A port's stopForShutdown
// therefore stops nothing (a second Supervisor::shutdown would be the second signal's SIGKILL):
// it waits for that command's Supervisor to be done, then the lock is released. A Supervisor done
// on its own also asks for the shutdown of the whole process (setShutdownRequest), once. If the
// watchdog dies, every command is killed at once (Supervisor::abort), none drained, and the
// process goes the same way. A second signal SIGKILLs every group still running. Exit status: the
// first non-zero code a Supervisor finished with (in time order), else 0.
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

namespace leasehold::lock {

class RunMode {
 public:
  // One supervised command: its settings and what its log lines add (a shard's number).
  struct Command {
    supervise::SupervisorConfig config;
    log::Fields logFields;
  };

  // Makes this process a child subreaper and starts the watchdog (`executable __watchdog`:
  // the leasehold binary itself, /proc/self/exe); the problem when it cannot.
  static std::variant<std::unique_ptr<RunMode>, std::string> start(
      boost::asio::io_context& io, time::Clock& clock, std::vector<Command> commands,
      const log::Logger& logger, const std::string& executable = "/proc/self/exe");
  // The same rules without real processes (the unit tests' way in): command i goes through
  // launchers[i] (each outlives this object); no reaper, no watchdog.
  RunMode(boost::asio::io_context& io, time::Clock& clock, std::vector<Command> commands,
          const std::vector<supervise::ProcessLauncher*>& launchers, const log::Logger& logger);
  ~RunMode();
  RunMode(const RunMode&) = delete;
  RunMode& operator=(const RunMode&) = delete;

  // Command i's port, for its Sidecar. Its stopForShutdown begins the way out if nothing has
  // (no caller does that: the signal or a finished Supervisor comes first) and runs `ready`
  // once that command's Supervisor is done.
  CommandPort port(std::size_t i = 0);
  // A Supervisor is done on its own: the caller runs the shutdown sequence (Sidecar::shutdown,
  // ShardMode::shutdown), whose drain then finds nothing left to stop.
  void setShutdownRequest(std::function<void()> f) { shutdownRequest_ = std::move(f); }
  // The first SIGTERM/SIGINT: every command drains from now on, with this signal. Nothing when
  // the way out has begun already.
  void noteSignal(int signo) { beginShutdown(signo); }
  // A second signal: SIGKILL to every group still running (then the releases). false when no
  // command is left to stop (the caller exits at once).
  bool secondSignal(int signo);
  // leasehold's exit status: the first non-zero a command finished with (the command's own, the
  // shell's convention), 3 after a lost term with --exit-on-loss, 70 when the watchdog died; 0
  // when none.
  int exitCode() const { return exitCode_; }
  std::size_t commandsRunning() const;

 private:
  struct Processes;
  struct Supervised;
  RunMode(boost::asio::io_context& io, time::Clock& clock, std::vector<Command> commands,
          const std::vector<supervise::ProcessLauncher*>& launchers, const log::Logger& logger,
          std::unique_ptr<Processes> processes);
  void post(std::function<void()> f);
  // Every Supervisor's shutdown(signo), once: the way out has begun.
  void beginShutdown(int signo);
  void finished(std::size_t i, int code);
  void watchdogExited(const std::string& why);

  boost::asio::io_context& io_;
  const log::Logger& logger_;
  // The real process side (null in unit tests); destroyed after the Supervisors that use it.
  std::unique_ptr<Processes> processes_;
  std::vector<std::unique_ptr<Supervised>> commands_;
  std::function<void()> shutdownRequest_;
  bool shuttingDown_ = false;
  int exitCode_ = 0;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::lock

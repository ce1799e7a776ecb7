#pragma once
// Run mode's wiring (`leasehold run [flags] -- CMD`): supervise::Supervisor on the real process
// side (PosixProcessLauncher, ChildReaper, the watchdog process), presented to the Sidecar as its
// CommandPort, plus the way out: the exit code, and a shutdown the Supervisor asks for itself
// (the command ended with --restart never, a lost term with --exit-on-loss, the watchdog died).
//
// What the Supervisor decides reaches the Sidecar posted to the loop, never from inside the
// elector event that caused it: the Sidecar's continuation may call into the elector.
//
// The first SIGTERM/SIGINT shuts the Supervisor down at once (noteSignal), not when the Sidecar
// shuts down: with --coordinated the shutdown sequence deletes the LeaseCandidate first, an API
// round trip in which the Elector may still acquire (the controller named this replica) and a
// Supervisor not yet told would start the command after the signal. The port's stopForShutdown
// then stops nothing (a second Supervisor::shutdown would be the second signal's SIGKILL): it
// waits for the Supervisor to be done.
#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <variant>

#include "lock/Sidecar.h"
#include "log/Logger.h"
#include "supervise/ProcessLauncher.h"
#include "supervise/Supervisor.h"
#include "time/Clock.h"

namespace leasehold::lock {

class RunMode {
 public:
  // Makes this process a child subreaper and starts the watchdog (`executable __watchdog`:
  // the leasehold binary itself, /proc/self/exe); the problem when it cannot.
  static std::variant<std::unique_ptr<RunMode>, std::string> start(
      boost::asio::io_context& io, time::Clock& clock, supervise::SupervisorConfig config,
      const log::Logger& logger, const std::string& executable = "/proc/self/exe");
  // The same rules without real processes (the unit tests' way in): the command goes through
  // `launcher` (which outlives this object); no reaper, no watchdog.
  RunMode(boost::asio::io_context& io, time::Clock& clock, supervise::SupervisorConfig config,
          supervise::ProcessLauncher& launcher, const log::Logger& logger);
  ~RunMode();
  RunMode(const RunMode&) = delete;
  RunMode& operator=(const RunMode&) = delete;

  // Its stopForShutdown shuts the Supervisor down if nothing has (no caller does that: the
  // signal or the Supervisor's own end comes first) and runs `ready` once it is done.
  CommandPort port();
  // The Supervisor is done on its own: the caller runs the shutdown sequence (Sidecar::shutdown,
  // whose drain then finds nothing left to stop).
  void setShutdownRequest(std::function<void()> f) { shutdownRequest_ = std::move(f); }
  // The first SIGTERM/SIGINT: the command drains from now on, with this signal. Nothing when the
  // way out has begun already.
  void noteSignal(int signo) { beginShutdown(signo); }
  // A second signal: true when it went to the Supervisor (SIGKILL to the group, then the
  // release); false when there is no command left to stop (the caller exits at once).
  bool secondSignal(int signo);
  // leasehold's exit status: the command's (the shell's convention), 3 after a lost term with
  // --exit-on-loss, 70 when the watchdog died, 0 when no command was running at the end.
  int exitCode() const { return exitCode_; }

 private:
  struct Processes;
  RunMode(boost::asio::io_context& io, time::Clock& clock, supervise::SupervisorConfig config,
          supervise::ProcessLauncher& launcher, const log::Logger& logger,
          std::unique_ptr<Processes> processes);
  void post(std::function<void()> f);
  // The Supervisor's shutdown(signo), once: the way out has begun.
  void beginShutdown(int signo);
  void finished(int code);

  boost::asio::io_context& io_;
  const log::Logger& logger_;
  // The real process side (null in unit tests); destroyed after the Supervisor that uses it.
  std::unique_ptr<Processes> processes_;
  supervise::Supervisor supervisor_;
  std::function<void()> shutdownRequest_;
  std::function<void()> releaseReady_;
  std::function<void()> shutdownReady_;
  bool shuttingDown_ = false;
  int exitCode_ = 0;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::lock

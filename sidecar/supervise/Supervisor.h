#pragma once
// Run mode's policy: runs one command while this replica leads and stops it before anyone else
// may lead. Pure: time comes from time::Clock, processes are reached through ProcessLauncher,
// the election through the calls below, so every timing rule replays on FakeClock.
//
// Timing, with R = the instant the claim ends (send time of the last confirmed renewal + the
// renew deadline) and G = --kill-grace:
//  - the command starts when this replica leads, with the term's fencing token, and only while
//    R - G is still ahead (else it would be stopped at once);
//  - renewals failing until R - G: SIGTERM to the whole group; SIGKILL at K = R - a (a, the
//    reap allowance, is min(100 ms, G / 2): what the kernel and the loop need to kill and reap
//    the group), so the group is gone by R, D - R before any other replica may take over;
//  - leadership lost or POST /leader/release at t: SIGTERM at t, SIGKILL at min(t + G, K);
//  - SIGTERM/SIGINT to leasehold at t (drain): the same signal to the group while renewals go
//    on, SIGKILL at min(t + --drain-timeout, K); a second signal: SIGKILL at once;
//  - K is also handed to the launcher as the backstop (the watchdog process kills the group at
//    K even if this process is paused), moved at every renewal;
//  - a signal cannot be taken back: once SIGTERM went out, a renewal does not cancel the stop.
//    If the term is still valid when the group is gone, the command starts again.
//
// Ending: the Lease is released only after the group is gone (hooks.readyToRelease after a
// release request, hooks.finish on the way out).
//  - the command exits on its own while leading: --restart never (and on-failure after exit
//    0): finish(its exit code); on-failure (non-zero) or always: start it again in the same
//    term, same token, after a backoff of 1 s doubling to 30 s (reset after a run of 30 s and in
//    every new term);
//  - a term ends (lost, or released): wait for the next term, or with --exit-on-loss
//    finish(kExitLeadershipLost) so that Kubernetes restarts the container;
//  - shutdown: finish(the command's exit code), 0 if none was running;
//  - abort (the watchdog died): SIGKILL, finish(kExitSupervisionFailed).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "log/Logger.h"
#include "supervise/ProcessLauncher.h"
#include "time/Clock.h"

namespace leasehold::supervise {

enum class RestartPolicy { kNever, kOnFailure, kAlways };
const char* toString(RestartPolicy p);

// Exit codes of leasehold run besides the command's own.
inline constexpr int kExitLeadershipLost = 3;      // --exit-on-loss after a term ended
inline constexpr int kExitSupervisionFailed = 70;  // the watchdog died: no longer safe

struct SupervisorConfig {
  std::vector<std::string> command;  // argv, non-empty
  std::string lease;     // LEASEHOLD_LEASE: "namespace/name"; on etcd the election's name
  std::string identity;  // for LEASEHOLD_IDENTITY
  time::Duration killGrace = std::chrono::seconds(5);  // less than the renew deadline
  time::Duration drainTimeout = std::chrono::seconds(25);
  RestartPolicy restart = RestartPolicy::kNever;
  bool exitOnLoss = false;
  // Shard mode: LEASEHOLD_SHARD and LEASEHOLD_SHARDS, added to the command's environment.
  Environment extraEnv{};
  // With --exit-on-loss, whether a release (POST /leader/release) ends leasehold like a lost
  // term. Shard mode: no, a shard moved away by rebalancing is released, not lost.
  bool exitOnRelease = true;
  time::Duration backoffFirst = std::chrono::seconds(1);
  time::Duration backoffMax = std::chrono::seconds(30);
};

// What the Supervisor asks of the rest of leasehold. Neither may destroy the Supervisor
// synchronously.
struct SupervisorHooks {
  // After release(): the group is gone; the Lease may be released now.
  std::function<void()> readyToRelease;
  // leasehold should release the Lease (if it holds it) and exit with this code. Runs once.
  std::function<void(int exitCode)> finish;
};

class Supervisor {
 public:
  Supervisor(time::Clock& clock, ProcessLauncher& launcher, SupervisorConfig config,
             SupervisorHooks hooks, const log::Logger& logger);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // From the elector: this replica leads term `token` and its claim holds until validUntil
  // (acquired, renewed, or resumed by a late confirmation).
  void leading(std::int64_t token, time::MonoTime validUntil);
  // From the elector: it stopped claiming (deadline passed, another holder, released).
  void lost();
  // POST /leader/release: stops the group (SIGTERM, SIGKILL at the grace) and calls
  // readyToRelease once it is gone (at once when none runs); no start until a new term.
  void release();
  // SIGTERM/SIGINT to leasehold: the first drains, the next kills.
  void shutdown(int signo);
  // Something the safety rests on failed (the watchdog died): SIGKILL the group, finish.
  void abort(const std::string& why);

  bool commandRunning() const { return group_ != Group::kNone; }
  std::optional<int> commandPid() const;
  bool finished() const { return finished_; }

  // What the kernel and the loop get to kill and reap the group before R.
  static time::Duration reapAllowance(time::Duration killGrace);

 private:
  enum class Group { kNone, kRunning, kTerminating, kKilled };

  void reconcile();
  void reconcileOnce();
  void steerGroup(time::MonoTime now);
  void whenNoGroup(time::MonoTime now);
  void startCommand(time::MonoTime now);
  void onGroupExit(std::uint64_t generation, ExitStatus status);
  void commandEndedOnItsOwn(time::MonoTime now, const ExitStatus& status);
  void kill(const std::string& why);
  void finish(int code);
  bool claimValid(time::MonoTime now) const { return leading_ && now < validUntil_; }
  time::MonoTime killInstant() const { return validUntil_ - reapAllowance(config_.killGrace); }

  time::Clock& clock_;
  ProcessLauncher& launcher_;
  SupervisorConfig config_;
  SupervisorHooks hooks_;
  const log::Logger& logger_;
  std::unique_ptr<time::Timer> stopTimer_;     // R - G: renewals failing
  std::unique_ptr<time::Timer> killTimer_;     // SIGKILL
  std::unique_ptr<time::Timer> restartTimer_;  // backoff over
  std::shared_ptr<char> alive_ = std::make_shared<char>();

  // The term, as the elector last told it.
  bool leading_ = false;
  std::optional<std::int64_t> token_;
  time::MonoTime validUntil_{};
  bool ledThisTerm_ = false;  // a lost() ends a term only if there was one
  bool termEnded_ = false;    // a term ended since the last leading()
  bool holdUntilNewTerm_ = false;
  // This term was let go by our own release (exitOnRelease false): its end is not a loss.
  bool releasedThisTerm_ = false;

  // The group.
  Group group_ = Group::kNone;
  int pid_ = -1;
  std::int64_t groupToken_ = 0;
  std::uint64_t generation_ = 0;
  time::MonoTime startedAt_{};
  time::MonoTime termSentAt_{};
  time::Duration stopBudget_{};
  time::MonoTime guardedUntil_{};

  // What was asked for.
  bool releaseRequested_ = false;
  bool releaseWhileLeading_ = false;
  int shutdownSignals_ = 0;
  int firstSignal_ = 0;
  std::optional<std::string> aborted_;
  std::optional<int> exitCodeAfterShutdown_;
  std::optional<int> finishWith_;  // the command ended for good on its own
  bool finished_ = false;

  // Restarts within a term.
  time::Duration nextBackoff_;
  std::optional<time::MonoTime> restartAt_;

  bool reconciling_ = false;
  bool again_ = false;
};

}  // namespace leasehold::supervise

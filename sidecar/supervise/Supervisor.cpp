#include "supervise/Supervisor.h"

#include <signal.h>

#include <algorithm>
#include <utility>

namespace leasehold::supervise {

using namespace std::chrono_literals;

namespace {

// Durations in the log, to the millisecond ("9.846s", not "9846132427ns").
std::string forLog(time::Duration d) {
  return time::formatDuration(std::chrono::round<std::chrono::milliseconds>(d));
}

}  // namespace

const char* toString(RestartPolicy p) {
  switch (p) {
    case RestartPolicy::kNever:
      return "never";
    case RestartPolicy::kOnFailure:
      return "on-failure";
    case RestartPolicy::kAlways:
      return "always";
  }
  return "?";
}

time::Duration Supervisor::reapAllowance(time::Duration killGrace) {
  return std::min<time::Duration>(100ms, killGrace / 2);
}

Supervisor::Supervisor(time::Clock& clock, ProcessLauncher& launcher, SupervisorConfig config,
                       SupervisorHooks hooks, const log::Logger& logger)
    : clock_(clock),
      launcher_(launcher),
      config_(std::move(config)),
      hooks_(std::move(hooks)),
      logger_(logger),
      stopTimer_(clock_.makeTimer([this] { reconcile(); })),
      killTimer_(clock_.makeTimer([this] { reconcile(); })),
      restartTimer_(clock_.makeTimer([this] { reconcile(); })),
      nextBackoff_(config_.backoffFirst) {}

Supervisor::~Supervisor() = default;

std::optional<int> Supervisor::commandPid() const {
  if (group_ == Group::kNone) return std::nullopt;
  return pid_;
}

// ---- events -------------------------------------------------------------------------------

void Supervisor::leading(std::int64_t token, time::MonoTime validUntil) {
  if (token_ && *token_ != token) {
    // A new term starts afresh.
    nextBackoff_ = config_.backoffFirst;
    restartAt_.reset();
    releasedThisTerm_ = false;
  }
  leading_ = true;
  ledThisTerm_ = true;
  termEnded_ = false;
  token_ = token;
  validUntil_ = validUntil;
  reconcile();
}

void Supervisor::lost() {
  if ((leading_ || ledThisTerm_) && !releasedThisTerm_) termEnded_ = true;
  releasedThisTerm_ = false;
  leading_ = false;
  ledThisTerm_ = false;
  holdUntilNewTerm_ = false;
  restartAt_.reset();
  nextBackoff_ = config_.backoffFirst;
  reconcile();
}

void Supervisor::release() {
  if (finished_ || shutdownSignals_ > 0 || releaseRequested_) return;
  releaseRequested_ = true;
  releaseWhileLeading_ = leading_;
  holdUntilNewTerm_ = true;
  restartAt_.reset();
  reconcile();
}

void Supervisor::shutdown(int signo) {
  if (finished_) return;
  if (++shutdownSignals_ == 1) firstSignal_ = signo;
  reconcile();
}

void Supervisor::abort(const std::string& why) {
  if (finished_ || aborted_) return;
  logger_.error("run mode can no longer guarantee the stop: killing the command", {{"why", why}});
  aborted_ = why;
  reconcile();
}

void Supervisor::onGroupExit(std::uint64_t generation, ExitStatus status) {
  if (generation != generation_ || group_ == Group::kNone) return;
  const time::MonoTime now = clock_.now();
  const bool stoppedByUs = group_ != Group::kRunning;
  group_ = Group::kNone;
  stopTimer_->disarm();
  killTimer_->disarm();
  logger_.info("command exited", {{"pid", std::to_string(pid_)},
                                  {"status", status.describe()},
                                  {"ran", forLog(now - startedAt_)}});
  pid_ = -1;
  if (shutdownSignals_ > 0) exitCodeAfterShutdown_ = status.shellCode();
  // Ended on its own: not signalled by us, nothing else ending it, and the claim still valid
  // (a group the watchdog killed while this process was paused ended with the term).
  if (!stoppedByUs && !aborted_ && shutdownSignals_ == 0 && !releaseRequested_ && claimValid(now)) {
    commandEndedOnItsOwn(now, status);
  }
  reconcile();
}

void Supervisor::commandEndedOnItsOwn(time::MonoTime now, const ExitStatus& status) {
  const bool again = config_.restart == RestartPolicy::kAlways ||
                     (config_.restart == RestartPolicy::kOnFailure && !status.success());
  if (!again) {
    logger_.info("command ended: releasing and exiting with its status",
                 {{"status", status.describe()}, {"restart", toString(config_.restart)}});
    finishWith_ = status.shellCode();
    return;
  }
  if (now - startedAt_ >= config_.backoffMax) nextBackoff_ = config_.backoffFirst;
  restartAt_ = now + nextBackoff_;
  logger_.warn("command ended: restarting it in the same term",
               {{"status", status.describe()},
                {"in", forLog(nextBackoff_)},
                {"restart", toString(config_.restart)}});
  nextBackoff_ = std::min(nextBackoff_ * 2, config_.backoffMax);
}

// ---- deciding -----------------------------------------------------------------------------

// Every event and timer ends here: the decision depends only on the state, never on which
// event came, so the rules in the header are all in steerGroup() and whenNoGroup(). Hooks and
// the launcher may call back in; such calls set again_ and are decided in the next round.
void Supervisor::reconcile() {
  if (reconciling_) {
    again_ = true;
    return;
  }
  reconciling_ = true;
  do {
    again_ = false;
    if (!finished_) reconcileOnce();
  } while (again_);
  reconciling_ = false;
}

void Supervisor::reconcileOnce() {
  const time::MonoTime now = clock_.now();
  if (group_ == Group::kNone) {
    whenNoGroup(now);
  } else {
    steerGroup(now);
  }
}

void Supervisor::steerGroup(time::MonoTime now) {
  const time::MonoTime deadlineKill = killInstant();
  // The backstop follows the claim of the group's own term (a new term's claim is not the
  // old group's business: it is being stopped).
  if (leading_ && groupToken_ == *token_ && deadlineKill > guardedUntil_ &&
      group_ != Group::kKilled) {
    launcher_.guardUntil(deadlineKill);
    guardedUntil_ = deadlineKill;
  }
  if (group_ == Group::kKilled) return;
  if (aborted_) return kill("supervision failed: " + *aborted_);
  if (shutdownSignals_ >= 2) return kill("second signal");

  std::string why;
  time::Duration budget = config_.killGrace;
  int signo = SIGTERM;
  if (shutdownSignals_ == 1) {
    why = "shutting down (SIG" + signalName(firstSignal_) + "): draining";
    budget = config_.drainTimeout;
    signo = firstSignal_;
  } else if (releaseRequested_) {
    why = "release requested";
  } else if (!claimValid(now)) {
    why = "leadership lost";
  } else if (groupToken_ != *token_) {
    why = "a new term began";
  } else if (now >= validUntil_ - config_.killGrace) {
    why = "renewals failing: the renew deadline is " + forLog(validUntil_ - now) + " away";
  }

  if (group_ == Group::kRunning) {
    if (why.empty()) {
      stopTimer_->armAt(validUntil_ - config_.killGrace);
      return;
    }
    stopTimer_->disarm();
    const time::MonoTime killAt = std::min(now + budget, deadlineKill);
    // Woken past the kill instant (this process was paused): no time for a SIGTERM.
    if (now >= killAt) return kill(why + "; the renew deadline is due");
    const log::Fields f{{"signal", signalName(signo)},
                        {"pid", std::to_string(pid_)},
                        {"why", why},
                        {"killIn", forLog(std::max(killAt - now, time::Duration{}))}};
    if (shutdownSignals_ == 1 || releaseRequested_) {
      logger_.info("stopping the command", f);
    } else {
      logger_.warn("stopping the command", f);
    }
    launcher_.signalGroup(signo);
    group_ = Group::kTerminating;
    termSentAt_ = now;
    stopBudget_ = budget;
  }
  const time::MonoTime killAt = std::min(termSentAt_ + stopBudget_, deadlineKill);
  if (now >= killAt) {
    return kill(killAt == deadlineKill ? "the renew deadline is due" : "the grace ran out");
  }
  killTimer_->armAt(killAt);
}

void Supervisor::whenNoGroup(time::MonoTime now) {
  stopTimer_->disarm();
  killTimer_->disarm();
  if (aborted_) return finish(kExitSupervisionFailed);
  if (shutdownSignals_ > 0) return finish(exitCodeAfterShutdown_.value_or(0));
  if (finishWith_) return finish(*finishWith_);
  if (releaseRequested_) {
    releaseRequested_ = false;
    if (config_.exitOnLoss && config_.exitOnRelease && releaseWhileLeading_) {
      logger_.info("released: exiting (--exit-on-loss)");
      return finish(kExitLeadershipLost);
    }
    // Shard mode: the step-down this release causes is not a lost term.
    if (releaseWhileLeading_) releasedThisTerm_ = true;
    if (hooks_.readyToRelease) hooks_.readyToRelease();
    return;
  }
  if (termEnded_ && config_.exitOnLoss) {
    logger_.warn("leadership lost: exiting (--exit-on-loss)");
    return finish(kExitLeadershipLost);
  }
  if (!claimValid(now) || holdUntilNewTerm_) {
    restartTimer_->disarm();
    return;
  }
  if (restartAt_ && now < *restartAt_) {
    restartTimer_->armAt(*restartAt_);
    return;
  }
  // Not so close to the deadline that the command would be stopped as it starts; a renewal
  // decides again.
  if (now >= validUntil_ - config_.killGrace) return;
  startCommand(now);
}

void Supervisor::startCommand(time::MonoTime now) {
  restartAt_.reset();
  restartTimer_->disarm();
  Environment env{{"LEASEHOLD_FENCING_TOKEN", std::to_string(*token_)},
                  {"LEASEHOLD_LEASE", config_.lease},
                  {"LEASEHOLD_IDENTITY", config_.identity}};
  env.insert(env.end(), config_.extraEnv.begin(), config_.extraEnv.end());
  const std::uint64_t generation = ++generation_;
  std::weak_ptr<char> alive = alive_;
  const time::MonoTime killBy = killInstant();
  const LaunchResult started =
      launcher_.start(config_.command, env, killBy, [this, alive, generation](ExitStatus s) {
        if (alive.expired()) return;
        onGroupExit(generation, s);
      });
  startedAt_ = now;
  groupToken_ = *token_;
  if (!started) {
    logger_.error("cannot start the command", {{"problem", started.problem}});
    // As a shell would: 127, and the restart policy decides.
    commandEndedOnItsOwn(now, ExitStatus::exited(127));
    again_ = true;
    return;
  }
  group_ = Group::kRunning;
  pid_ = started.pid;
  guardedUntil_ = killBy;
  logger_.info("command started", {{"pid", std::to_string(pid_)},
                                   {"token", std::to_string(groupToken_)},
                                   {"command", config_.command.front()}});
  again_ = true;  // arm the stop timer
}

void Supervisor::kill(const std::string& why) {
  logger_.warn("killing the command's process group",
               {{"signal", "KILL"}, {"pid", std::to_string(pid_)}, {"why", why}});
  stopTimer_->disarm();
  killTimer_->disarm();
  group_ = Group::kKilled;
  launcher_.signalGroup(SIGKILL);
}

void Supervisor::finish(int code) {
  finished_ = true;
  restartTimer_->disarm();
  if (hooks_.finish) hooks_.finish(code);
}

}  // namespace leasehold::supervise

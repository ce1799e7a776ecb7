#pragma once
// The real ProcessLauncher: fork + exec, on the event loop, no thread of its own.
//
// The child, before exec: a process group of its own (setpgid, also done by the parent against
// the race), PR_SET_PDEATHSIG(SIGKILL) (if leasehold dies, the kernel kills the leader; the
// watchdog kills the rest of the group), signal mask and dispositions reset (leasehold ignores
// SIGPIPE; the command must not inherit that), every descriptor above stderr closed on exec.
// Only system calls run between fork and exec: the parent may have a second thread.
//
// The group is gone, and onExit runs, when the leader has been reaped AND kill(-group, 0)
// finds nobody left. When the leader exits, whatever it left in the group gets SIGTERM (sent
// while the leader is still a zombie: its pid holds the group id, so the signal cannot reach a
// stranger) and, `leftoverGrace` later, SIGKILL. Those processes are orphans that ChildReaper
// reaps (subreaper); the group is checked again after every reap and every 20 ms.
//
// The watchdog guards the group from start() until the group is gone or has been sent SIGKILL
// (which no pause can stop from taking effect).
//
// SIGPIPE must be ignored by the process (main does): the watchdog's pipe may close.
#include <sys/types.h>

#include <memory>
#include <optional>

#include "supervise/ChildReaper.h"
#include "supervise/ProcessLauncher.h"
#include "supervise/Watchdog.h"
#include "time/Clock.h"

namespace leasehold::supervise {

class PosixProcessLauncher : public ProcessLauncher {
 public:
  // clock: the Supervisor's (times in start() and guardUntil() are in its terms; the watchdog
  // gets them as real CLOCK_BOOTTIME instants).
  PosixProcessLauncher(time::Clock& clock, ChildReaper& reaper, Watchdog& watchdog,
                       time::Duration leftoverGrace);
  // A group still running gets SIGKILL (a last resort: the Supervisor stops it first).
  ~PosixProcessLauncher() override;

  LaunchResult start(const std::vector<std::string>& argv, const Environment& extraEnv,
                     time::MonoTime killBy, ExitHandler onExit) override;
  void guardUntil(time::MonoTime killBy) override;
  void signalGroup(int signo) override;

  std::optional<pid_t> group() const;

 private:
  void leaderExited();
  void leaderReaped(ExitStatus status);
  void checkGroupGone();
  void killGroup();
  time::MonoTime realBootTime(time::MonoTime t) const;

  time::Clock& clock_;
  ChildReaper& reaper_;
  Watchdog& watchdog_;
  time::Duration leftoverGrace_;
  std::unique_ptr<time::Timer> recheck_;
  std::unique_ptr<time::Timer> killLeftovers_;
  pid_t group_ = -1;
  bool leaderGone_ = false;
  bool killed_ = false;  // SIGKILL went to the group: the watchdog has stood down
  ExitStatus leaderStatus_;
  ExitHandler onExit_;
};

// argv[0] as exec would find it: as is when it holds a '/', else the first executable regular
// file of that name in `path` (colon-separated; an empty entry is the current directory).
std::optional<std::string> findExecutable(const std::string& name, const std::string& path);

}  // namespace leasehold::supervise

#pragma once
// The Supervisor's only window on processes: start a command in a process group of its own,
// signal that group, be told when it is gone. PosixProcessLauncher is the real one; the unit
// tests use a fake that fails the test on any call it was not told to expect.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "supervise/ExitStatus.h"
#include "time/Time.h"

namespace leasehold::supervise {

using Environment = std::vector<std::pair<std::string, std::string>>;

// start()'s answer: the process group's id (the leader's pid), or why nothing was started.
struct LaunchResult {
  int pid = -1;
  std::string problem;
  explicit operator bool() const { return pid > 0; }
};

class ProcessLauncher {
 public:
  using ExitHandler = std::function<void(ExitStatus)>;
  virtual ~ProcessLauncher() = default;

  // Starts argv (argv[0] looked up in PATH unless it holds a '/') as the leader of a new process
  // group, with this process's environment plus `extraEnv` (which wins), stdin/stdout/stderr
  // passed through. One group at a time.
  //
  // killBy is the backstop: the group is SIGKILLed at that instant even if this process is
  // paused or killed by then (the watchdog's job), unless guardUntil() moves it first.
  //
  // onExit runs on the loop, never from inside start(), once the leader has exited AND no
  // process of the group is left (the launcher SIGKILLs whatever the leader left behind), with
  // the leader's status.
  virtual LaunchResult start(const std::vector<std::string>& argv, const Environment& extraEnv,
                             time::MonoTime killBy, ExitHandler onExit) = 0;
  // Moves the running group's backstop (later after a renewal).
  virtual void guardUntil(time::MonoTime killBy) = 0;
  // Sends signo to every process of the running group.
  virtual void signalGroup(int signo) = 0;
};

}  // namespace leasehold::supervise

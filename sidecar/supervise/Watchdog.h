#pragma once
// The supervisor's end of the watchdog (see WatchdogProcess.h): starts the watchdog process and
// hands it orders through a non-blocking pipe. Writing an order never blocks the loop; an order
// that does not fit (the watchdog stopped reading) is dropped, which leaves the older, earlier
// kill instant in force: the safe side.
#include <sys/types.h>

#include <memory>
#include <string>

#include "time/Time.h"

namespace leasehold::supervise {

class Watchdog;

struct WatchdogStart {
  std::unique_ptr<Watchdog> watchdog;
  std::string problem;  // why not, when watchdog is null
};

class Watchdog {
 public:
  // Forks and executes `executable` (the leasehold binary: /proc/self/exe) as the watchdog, in a
  // process group of its own, with its order pipe on descriptor kWatchdogOrderFd.
  static WatchdogStart start(const std::string& executable);
  // Closes the pipe: the watchdog exits (killing a group it still guards).
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Kill process group `group` at `killAt` (real CLOCK_BOOTTIME) unless told otherwise first.
  // false: the order could not be written (the watchdog is gone or not reading).
  bool guard(pid_t group, time::MonoTime killAt);
  // No longer guard `group` (gone, or SIGKILLed); the others stay guarded.
  bool standDown(pid_t group);
  // No longer guard any group.
  bool standDown();
  pid_t pid() const { return pid_; }

 private:
  Watchdog(pid_t pid, int orderFd) : pid_(pid), orderFd_(orderFd) {}
  bool send(std::int64_t group, std::int64_t killAtNs);

  pid_t pid_;
  int orderFd_;
};

}  // namespace leasehold::supervise

#include "supervise/Watchdog.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "supervise/ChildSetup.h"
#include "supervise/WatchdogOrder.h"

namespace leasehold::supervise {

WatchdogStart Watchdog::start(const std::string& executable) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return {nullptr, std::string("cannot create the watchdog's pipe: ") + std::strerror(errno)};
  }
  const int readEnd = fds[0];
  const int writeEnd = fds[1];
  ::fcntl(writeEnd, F_SETFL, ::fcntl(writeEnd, F_GETFL) | O_NONBLOCK);
  char arg0[] = "leasehold";
  char arg1[32];
  std::strncpy(arg1, kWatchdogArgument, sizeof arg1 - 1);
  arg1[sizeof arg1 - 1] = '\0';
  char* argv[] = {arg0, arg1, nullptr};

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(readEnd);
    ::close(writeEnd);
    return {nullptr, std::string("cannot start the watchdog: ") + std::strerror(e)};
  }
  if (pid == 0) {
    // The child of a process that may have two threads: system calls only, until exec.
    ::setpgid(0, 0);
    if (readEnd == kWatchdogOrderFd) {
      ::fcntl(readEnd, F_SETFD, 0);
    } else if (::dup2(readEnd, kWatchdogOrderFd) < 0) {
      ::_exit(127);
    }
    resetSignalsForExec();
    ::execv(executable.c_str(), argv);
    exitAfterFailedExec("watchdog");
  }
  ::setpgid(pid, pid);
  ::close(readEnd);
  return {std::unique_ptr<Watchdog>(new Watchdog(pid, writeEnd)), ""};
}

Watchdog::~Watchdog() {
  ::close(orderFd_);
}

bool Watchdog::guard(pid_t group, time::MonoTime killAt) {
  return send(group, killAt.time_since_epoch().count());
}

bool Watchdog::standDown(pid_t group) {
  return group > 0 && send(group, 0);
}

bool Watchdog::standDown() {
  return send(0, 0);
}

bool Watchdog::send(std::int64_t group, std::int64_t killAtNs) {
  const WatchdogOrder order{group, killAtNs};
  ssize_t n;
  do {
    n = ::write(orderFd_, &order, sizeof order);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof order);
}

}  // namespace leasehold::supervise

#include "supervise/WatchdogProcess.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "supervise/WatchdogGuards.h"
#include "supervise/WatchdogOrder.h"

namespace leasehold::supervise {
namespace {

std::int64_t bootNowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One line on stderr without stdio (nothing here allocates).
void say(const char* what, std::int64_t group) {
  char line[160];
  std::size_t n = 0;
  auto put = [&](const char* s) {
    while (*s && n < sizeof line - 1)
      line[n++] = *s++;
  };
  put("leasehold watchdog: ");
  put(what);
  put(": SIGKILL to process group ");
  char digits[24];
  int d = 0;
  std::uint64_t v = static_cast<std::uint64_t>(group);
  do {
    digits[d++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && d < 23);
  while (d > 0 && n < sizeof line - 1)
    line[n++] = digits[--d];
  line[n++] = '\n';
  ssize_t ignored = ::write(STDERR_FILENO, line, n);
  (void)ignored;
}

void setTimer(int timerFd, std::int64_t atNs) {
  itimerspec spec{};
  if (atNs > 0) {
    spec.it_value.tv_sec = atNs / 1'000'000'000;
    spec.it_value.tv_nsec = atNs % 1'000'000'000;
  }
  // All zero disarms; an instant already past fires at once.
  ::timerfd_settime(timerFd, TFD_TIMER_ABSTIME, &spec, nullptr);
}

}  // namespace

bool WatchdogProcess::invoked(int argc, char** argv) {
  return argc >= 2 && std::strcmp(argv[1], kWatchdogArgument) == 0;
}

void WatchdogProcess::run(int orderFd) {
  ::prctl(PR_SET_NAME, "lh-watchdog", 0, 0, 0);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE})
    ::signal(s, SIG_IGN);
  const int timerFd = ::timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC);
  if (timerFd < 0) {
    say("cannot create its timer, exiting", 0);
    ::_exit(1);
  }
  WatchdogGuards guards;
  std::int64_t groups[WatchdogGuards::kCapacity];
  unsigned char buffer[sizeof(WatchdogOrder) * 64];
  std::size_t filled = 0;
  for (;;) {
    pollfd fds[2] = {{orderFd, POLLIN, 0}, {timerFd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      ::_exit(1);
    }
    if (fds[1].revents & POLLIN) {
      std::uint64_t expirations;
      ssize_t ignored = ::read(timerFd, &expirations, sizeof expirations);
      (void)ignored;
    }
    // Orders first: one that came before the deadline counts even if we woke after it.
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::read(orderFd, buffer + filled, sizeof buffer - filled);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const std::size_t count = guards.takeAll(groups, WatchdogGuards::kCapacity);
        for (std::size_t i = 0; i < count; i++) {
          say("the supervisor is gone", groups[i]);
          ::kill(static_cast<pid_t>(-groups[i]), SIGKILL);
        }
        ::_exit(0);
      }
      filled += static_cast<std::size_t>(n);
      std::size_t used = 0;
      while (filled - used >= sizeof(WatchdogOrder)) {
        WatchdogOrder order;
        std::memcpy(&order, buffer + used, sizeof order);
        used += sizeof(WatchdogOrder);
        if (!guards.apply(order)) {
          say("too many groups to guard", order.group);
          ::kill(static_cast<pid_t>(-order.group), SIGKILL);
        }
      }
      std::memmove(buffer, buffer + used, filled - used);
      filled -= used;
    }
    const std::size_t due = guards.takeDue(bootNowNs(), groups, WatchdogGuards::kCapacity);
    for (std::size_t i = 0; i < due; i++) {
      say("no renewal came in time (is the supervisor paused?)", groups[i]);
      ::kill(static_cast<pid_t>(-groups[i]), SIGKILL);
    }
    setTimer(timerFd, guards.nextKillAt());
  }
}

}  // namespace leasehold::supervise

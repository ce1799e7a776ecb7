#include "supervise/ExitStatus.h"

#include <signal.h>
#include <sys/wait.h>

namespace leasehold::supervise {

ExitStatus ExitStatus::fromWaitStatus(int status) {
  if (WIFSIGNALED(status)) return signaled(WTERMSIG(status));
  return exited(WEXITSTATUS(status));
}

int ExitStatus::shellCode() const {
  if (kind == Kind::kSignaled) return 128 + value;
  return value & 0xff;
}

std::string ExitStatus::describe() const {
  if (kind == Kind::kSignaled) {
    return "signal " + std::to_string(value) + " (" + signalName(value) + ")";
  }
  return "exit " + std::to_string(value);
}

std::string signalName(int signo) {
  switch (signo) {
    case SIGTERM:
      return "TERM";
    case SIGINT:
      return "INT";
    case SIGKILL:
      return "KILL";
    case SIGHUP:
      return "HUP";
    case SIGQUIT:
      return "QUIT";
    case SIGCONT:
      return "CONT";
    case SIGSEGV:
      return "SEGV";
    case SIGABRT:
      return "ABRT";
    case SIGPIPE:
      return "PIPE";
    case SIGUSR1:
      return "USR1";
    case SIGUSR2:
      return "USR2";
    default:
      return "SIG" + std::to_string(signo);
  }
}

}  // namespace leasehold::supervise

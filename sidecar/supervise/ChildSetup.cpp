#include "supervise/ChildSetup.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace leasehold::supervise {

void resetSignalsForExec() {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s = 1; s < NSIG; ++s) {
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    ::sigaction(s, &sa, nullptr);
  }
}

void exitAfterFailedExec(const char* what) {
  static const char prefix[] = "leasehold: cannot execute the ";
  ssize_t ignored = ::write(STDERR_FILENO, prefix, sizeof prefix - 1);
  ignored = ::write(STDERR_FILENO, what, std::strlen(what));
  ignored = ::write(STDERR_FILENO, "\n", 1);
  (void)ignored;
  ::_exit(127);
}

}  // namespace leasehold::supervise

// supervise_test's main: the watchdog when started as the watchdog (the real launcher's tests
// execute /proc/self/exe, as leasehold does), GoogleTest otherwise.
#include <gtest/gtest.h>
#include <signal.h>

#include "supervise/WatchdogOrder.h"
#include "supervise/WatchdogProcess.h"

int main(int argc, char** argv) {
  using leasehold::supervise::WatchdogProcess;
  if (WatchdogProcess::invoked(argc, argv)) {
    WatchdogProcess::run(leasehold::supervise::kWatchdogOrderFd);
  }
  ::signal(SIGPIPE, SIG_IGN);  // as leasehold: the watchdog's pipe may close
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

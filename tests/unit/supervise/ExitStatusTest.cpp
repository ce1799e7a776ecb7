#include "supervise/ExitStatus.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace leasehold::supervise {
namespace {

TEST(ExitStatusTest, ShellCodesAreTheCodeOr128PlusTheSignal) {
  EXPECT_EQ(ExitStatus::exited(0).shellCode(), 0);
  EXPECT_EQ(ExitStatus::exited(3).shellCode(), 3);
  EXPECT_EQ(ExitStatus::signaled(SIGKILL).shellCode(), 137);
  EXPECT_EQ(ExitStatus::signaled(SIGTERM).shellCode(), 143);
  EXPECT_EQ(ExitStatus::signaled(SIGKILL).describe(), "signal 9 (KILL)");
  EXPECT_EQ(ExitStatus::exited(3).describe(), "exit 3");
  EXPECT_TRUE(ExitStatus::exited(0).success());
  EXPECT_FALSE(ExitStatus::signaled(SIGTERM).success());
}

TEST(ExitStatusTest, ReadsRealWaitStatuses) {
  const pid_t exits = ::fork();
  if (exits == 0) ::_exit(42);
  int status = 0;
  ASSERT_EQ(::waitpid(exits, &status, 0), exits);
  EXPECT_EQ(ExitStatus::fromWaitStatus(status), ExitStatus::exited(42));

  const pid_t killed = ::fork();
  if (killed == 0) {
    ::pause();
    ::_exit(0);
  }
  ::kill(killed, SIGKILL);
  ASSERT_EQ(::waitpid(killed, &status, 0), killed);
  EXPECT_EQ(ExitStatus::fromWaitStatus(status), ExitStatus::signaled(SIGKILL));
}

}  // namespace
}  // namespace leasehold::supervise

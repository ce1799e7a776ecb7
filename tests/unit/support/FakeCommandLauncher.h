#pragma once
// A supervise::ProcessLauncher (the Supervisor's window on the command's processes) that runs
// nothing and fails the test on any call it was not told to expect, in that order. Calls are
// rendered as text stamped with the fake clock's time since the test began ("@9.9s signal
// KILL"); the Supervisor's hooks go through the same check (call()), so the order across ports
// is checked too. Shared by the Supervisor's tests and run mode's (lock::RunMode);
// cluster::FakeProcessLauncher is the exec plugins' fake, another port.
#include <gtest/gtest.h>

#include <deque>
#include <optional>
#include <string>

#include "FakeClock.h"
#include "supervise/ProcessLauncher.h"

namespace leasehold::supervise {

class FakeCommandLauncher : public ProcessLauncher {
 public:
  FakeCommandLauncher(time::FakeClock& clock, time::MonoTime origin)
      : clock_(clock), origin_(origin) {}
  ~FakeCommandLauncher() override;

  // The calls that must come next, in order.
  void expect(std::vector<std::string> calls);
  // Fails the test if expected calls did not come.
  void verifyAllCame(const std::string& where);
  // Checks one call against what is expected ("@<time> <what>").
  void call(const std::string& what);

  // The next start() fails with this problem.
  void failNextStart(std::string problem) { nextStartProblem_ = std::move(problem); }
  // The running group ends (as the real launcher reports it: from the loop, later).
  void groupExits(ExitStatus status);
  bool groupRunning() const { return static_cast<bool>(onExit_); }
  const std::vector<std::string>& lastArgv() const { return lastArgv_; }
  const Environment& lastEnv() const { return lastEnv_; }

  // Time since the origin, as "9.9s" / "0s" / "120s".
  static std::string seconds(time::Duration d);
  // The other way: "9.95s" is 9.95 s (a script's times).
  static time::Duration parseSeconds(const std::string& text);
  std::string at(time::MonoTime t) const { return seconds(t - origin_); }

  LaunchResult start(const std::vector<std::string>& argv, const Environment& extraEnv,
                     time::MonoTime killBy, ExitHandler onExit) override;
  void guardUntil(time::MonoTime killBy) override;
  void signalGroup(int signo) override;

 private:
  time::FakeClock& clock_;
  time::MonoTime origin_;
  std::deque<std::string> expected_;
  std::optional<std::string> nextStartProblem_;
  ExitHandler onExit_;
  int nextPid_ = 100;
  std::vector<std::string> lastArgv_;
  Environment lastEnv_;
};

}  // namespace leasehold::supervise

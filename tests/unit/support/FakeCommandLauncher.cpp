#include "FakeCommandLauncher.h"

#include <cstdio>

namespace leasehold::supervise {

FakeCommandLauncher::~FakeCommandLauncher() = default;

std::string FakeCommandLauncher::seconds(time::Duration d) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  char buf[32];
  if (ms % 1000 == 0) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(ms / 1000));
  } else {
    std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ms) / 1000.0);
    std::string s = buf;
    while (s.back() == '0')
      s.pop_back();
    return s + "s";
  }
  return buf;
}

time::Duration FakeCommandLauncher::parseSeconds(const std::string& text) {
  EXPECT_EQ(text.back(), 's') << text;
  return std::chrono::round<std::chrono::microseconds>(
      std::chrono::duration<double>(std::stod(text.substr(0, text.size() - 1))));
}

void FakeCommandLauncher::expect(std::vector<std::string> calls) {
  expected_.assign(calls.begin(), calls.end());
}

void FakeCommandLauncher::verifyAllCame(const std::string& where) {
  for (const auto& missing : expected_)
    ADD_FAILURE() << where << ": expected call did not come: " << missing;
  expected_.clear();
}

void FakeCommandLauncher::call(const std::string& what) {
  const std::string stamped = "@" + at(clock_.now()) + " " + what;
  if (expected_.empty()) {
    ADD_FAILURE() << "unexpected call: " << stamped;
    return;
  }
  if (expected_.front() != stamped) {
    ADD_FAILURE() << "expected " << expected_.front() << ", got " << stamped;
  }
  expected_.pop_front();
}

LaunchResult FakeCommandLauncher::start(const std::vector<std::string>& argv,
                                        const Environment& extraEnv, time::MonoTime killBy,
                                        ExitHandler onExit) {
  std::string token = "?";
  for (const auto& [k, v] : extraEnv)
    if (k == "LEASEHOLD_FENCING_TOKEN") token = v;
  call("start token=" + token + " killBy=" + at(killBy));
  EXPECT_FALSE(onExit_) << "start() while a group runs";
  lastArgv_ = argv;
  lastEnv_ = extraEnv;
  if (nextStartProblem_) {
    auto problem = std::move(*nextStartProblem_);
    nextStartProblem_.reset();
    return {-1, problem};
  }
  onExit_ = std::move(onExit);
  return {nextPid_++, ""};
}

void FakeCommandLauncher::guardUntil(time::MonoTime killBy) {
  EXPECT_TRUE(onExit_) << "guardUntil() with no group";
  call("guard " + at(killBy));
}

void FakeCommandLauncher::signalGroup(int signo) {
  EXPECT_TRUE(onExit_) << "signalGroup() with no group";
  call("signal " + signalName(signo));
}

void FakeCommandLauncher::groupExits(ExitStatus status) {
  ASSERT_TRUE(onExit_) << "no group to exit";
  std::exchange(onExit_, nullptr)(status);
}

}  // namespace leasehold::supervise

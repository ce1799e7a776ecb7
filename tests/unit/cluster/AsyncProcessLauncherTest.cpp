// AsyncProcessLauncher on a real io_context with real short scripts, once with pidfd reaping and
// once with the polling fallback. Bounds are generous (LoopRunner): a busy machine is slow.
#include "cluster/AsyncProcessLauncher.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/asio/steady_timer.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "Emulation.h"
#include "LoopRunner.h"
#include "TemporaryDirectory.h"

namespace leasehold::cluster {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;

using Reaping = AsyncProcessLauncher::Reaping;

// Dead: absent, or a zombie (an orphan that the container's init has not reaped yet).
bool dead(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

class AsyncProcessLauncherTest : public testing::TestWithParam<Reaping> {
 protected:
  ProcessSpec script(const std::string& body, std::vector<std::string> args = {}) {
    ProcessSpec spec;
    spec.path = dir_.script("p" + std::to_string(++scripts_) + ".sh", body).string();
    spec.argv = {spec.path};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.environment = {"PATH=/usr/bin:/bin", "DIR=" + dir_.path().string()};
    return spec;
  }

  // Starts `spec` and runs the loop until it is reported.
  ProcessExit run(ProcessSpec spec) {
    std::optional<ProcessExit> exit;
    auto process =
        launcher_.start(std::move(spec), [&exit](ProcessExit e) { exit = std::move(e); });
    EXPECT_TRUE(loop_.runUntil([&] { return exit.has_value(); })) << "never reported";
    return exit.value_or(ProcessExit{});
  }

  std::string file(const std::string& name) const {
    std::ifstream in(dir_.path() / name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  testing_support::TemporaryDirectory dir_;
  LoopRunner loop_;
  AsyncProcessLauncher launcher_{loop_.io, GetParam()};
  int scripts_ = 0;
};

TEST_P(AsyncProcessLauncherTest, HowItEnded) {
  struct Case {
    const char* body;
    std::string output;
    std::optional<int> exitCode;
    std::optional<int> signal;
  };
  const std::vector<Case> cases = {
      {"printf hello\n", "hello", 0, std::nullopt},
      {"printf 'half'; exit 3\n", "half", 3, std::nullopt},
      {"printf x; kill -TERM $$\n", "x", std::nullopt, SIGTERM},
      {"kill -9 $$\n", "", std::nullopt, SIGKILL},
      // Output in many small pieces, with pauses: read as it comes, all of it.
      {"for i in 1 2 3 4 5; do printf $i; sleep 0.05; done\n", "12345", 0, std::nullopt},
  };
  for (const auto& c : cases) {
    const auto exit = run(script(c.body));
    EXPECT_EQ(exit.output, c.output) << c.body;
    EXPECT_EQ(exit.exitCode, c.exitCode) << c.body;
    EXPECT_EQ(exit.signal, c.signal) << c.body;
    EXPECT_FALSE(exit.startFailure) << c.body;
    EXPECT_FALSE(exit.outputTooLarge) << c.body;
  }
}

TEST_P(AsyncProcessLauncherTest, ArgumentsAndOnlyTheGivenEnvironment) {
  ::setenv("LEASEHOLD_TEST_NOT_PASSED", "1", 1);
  const auto exit = run(script(
      "printf '%s,%s,%s,%s' \"$1\" \"$2\" \"$DIR\" \"${LEASEHOLD_TEST_NOT_PASSED:-unset}\"\n",
      {"one", "two words"}));
  ::unsetenv("LEASEHOLD_TEST_NOT_PASSED");
  EXPECT_EQ(exit.output, "one,two words," + dir_.path().string() + ",unset");
}

TEST_P(AsyncProcessLauncherTest, StdinIsDevNullAndNoOtherDescriptorLeaks) {
  // A descriptor of ours without close-on-exec, as Asio's sockets are.
  const int leaky = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 0);
  ASSERT_EQ(::dup2(leaky, 77), 77);
  ::close(leaky);
  const auto exit =
      run(script("readlink /proc/$$/fd/0; [ -e /proc/$$/fd/77 ] && echo leaked || echo closed\n"
                 "cat\n"));  // would wait for a terminal if stdin were inherited
  ::close(77);
  EXPECT_EQ(exit.output, "/dev/null\nclosed\n");
  EXPECT_EQ(exit.exitCode, 0);
}

TEST_P(AsyncProcessLauncherTest, RunsInAProcessGroupOfItsOwn) {
  const auto exit = run(script("echo $$; cut -d' ' -f5 /proc/$$/stat\n"));
  std::istringstream lines(exit.output);
  std::string pid, pgrp;
  lines >> pid >> pgrp;
  EXPECT_EQ(pid, pgrp);
  EXPECT_NE(pgrp, std::to_string(::getpgrp()));
}

TEST_P(AsyncProcessLauncherTest, KillReachesWhatThePluginStarted) {
  std::optional<ProcessExit> exit;
  auto process = launcher_.start(script("sleep 30 & echo $! > \"$DIR/child\"; wait\n"),
                                 [&exit](ProcessExit e) { exit = std::move(e); });
  ASSERT_TRUE(
      loop_.runUntil([&] { return !file("child").empty() && file("child").back() == '\n'; }));
  const int grandchild = std::stoi(file("child"));
  EXPECT_FALSE(exit);
  process->kill();
  EXPECT_FALSE(exit) << "reported from inside kill()";
  ASSERT_TRUE(loop_.runUntil([&] { return exit.has_value(); }));
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_TRUE(loop_.runUntil([&] { return dead(grandchild); })) << "sleep survived the kill";
}

TEST_P(AsyncProcessLauncherTest, ExitedButPipeHeldOpenIsReportedAtTheKill) {
  // The script exits at once; the sleep it left behind keeps stdout open, so there is no EOF.
  std::optional<ProcessExit> exit;
  auto process = launcher_.start(script("printf early; sleep 30 &\nexit 0\n"),
                                 [&exit](ProcessExit e) { exit = std::move(e); });
  loop_.runFor(500ms);
  EXPECT_FALSE(exit) << "reported before the output ended";
  process->kill();
  EXPECT_FALSE(exit) << "reported from inside kill()";
  ASSERT_TRUE(loop_.runUntil([&] { return exit.has_value(); }));
  EXPECT_EQ(exit->exitCode, 0);
  EXPECT_EQ(exit->output, "early");
}

TEST_P(AsyncProcessLauncherTest, OutputIsCapped) {
  auto spec = script("head -c 2000000 /dev/zero\n");
  spec.maxOutputBytes = 1024 * 1024;
  const auto exit = run(std::move(spec));
  EXPECT_TRUE(exit.outputTooLarge);
  EXPECT_LE(exit.output.size(), 1024u * 1024u);
}

TEST_P(AsyncProcessLauncherTest, StartFailuresAreReportedFromTheLoop) {
  if (const char* emulator = leasehold::testing_support::userModeEmulator()) {
    // glibc's posix_spawn learns of a failed exec through memory it shares with the child
    // (clone with CLONE_VM | CLONE_VFORK); qemu-user runs that clone as a fork, so posix_spawn
    // succeeds and the child exits 127.
    GTEST_SKIP() << emulator << ": posix_spawn cannot report a failed exec";
  }
  const auto notExecutable = dir_.write("plain.txt", "not a program\n");
  struct Case {
    std::string path;
    std::string message;
  };
  for (const auto& c : std::vector<Case>{
           {(dir_.path() / "missing").string(), "cannot start: No such file or directory"},
           {notExecutable.string(), "cannot start: Permission denied"},
       }) {
    std::optional<ProcessExit> exit;
    auto process = launcher_.start(ProcessSpec{c.path, {c.path}, {}, 1024},
                                   [&exit](ProcessExit e) { exit = std::move(e); });
    EXPECT_FALSE(exit) << "reported from inside start()";
    ASSERT_TRUE(loop_.runUntil([&] { return exit.has_value(); }));
    ASSERT_TRUE(exit->startFailure) << c.path;
    EXPECT_THAT(*exit->startFailure, HasSubstr(c.message));
    EXPECT_FALSE(exit->exitCode);
  }
}

TEST_P(AsyncProcessLauncherTest, DroppingTheHandleKillsAndReapsWithoutReporting) {
  bool reported = false;
  auto process =
      launcher_.start(script("exec sleep 30\n"), [&reported](ProcessExit) { reported = true; });
  const int pid = process->pid();
  ASSERT_GT(pid, 0);
  loop_.runFor(100ms);
  process.reset();
  // Reaped by us: the pid disappears (a zombie would stay until we wait for it).
  EXPECT_TRUE(
      loop_.runUntil([&] { return !std::filesystem::exists("/proc/" + std::to_string(pid)); }));
  loop_.runFor(100ms);
  EXPECT_FALSE(reported);
}

TEST_P(AsyncProcessLauncherTest, TheLoopRunsWhileAProcessDoes) {
  std::optional<ProcessExit> exit;
  auto process =
      launcher_.start(script("sleep 1\n"), [&exit](ProcessExit e) { exit = std::move(e); });
  boost::asio::steady_timer timer(loop_.io, 50ms);
  bool fired = false;
  timer.async_wait([&](const boost::system::error_code&) { fired = true; });
  ASSERT_TRUE(loop_.runUntil([&] { return fired || exit.has_value(); }));
  EXPECT_TRUE(fired);
  EXPECT_FALSE(exit) << "the timer waited for the process";
  ASSERT_TRUE(loop_.runUntil([&] { return exit.has_value(); }));
  EXPECT_EQ(exit->exitCode, 0);
}

TEST_P(AsyncProcessLauncherTest, SeveralAtOnce) {
  std::vector<std::optional<ProcessExit>> exits(5);
  std::vector<std::unique_ptr<RunningProcess>> processes;
  for (int i = 0; i < 5; ++i) {
    processes.push_back(launcher_.start(
        script("sleep 0.2; printf " + std::to_string(i) + "\n"),
        [&exits, i](ProcessExit e) { exits[static_cast<std::size_t>(i)] = std::move(e); }));
  }
  ASSERT_TRUE(loop_.runUntil([&] {
    for (const auto& e : exits)
      if (!e) return false;
    return true;
  }));
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(exits[static_cast<std::size_t>(i)]->output, std::to_string(i));
}

INSTANTIATE_TEST_SUITE_P(Reaping, AsyncProcessLauncherTest,
                         testing::Values(Reaping::kPidFdOrPolling, Reaping::kPolling),
                         [](const testing::TestParamInfo<Reaping>& info) {
                           return info.param == Reaping::kPolling ? "Polling" : "PidFd";
                         });

}  // namespace
}  // namespace leasehold::cluster

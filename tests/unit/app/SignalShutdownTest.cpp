// SignalShutdown on a real io_context with real signals (raise() delivers them to this process;
// the signal_set turns them into handlers on the loop). Nothing waits on time except one generous
// bound that only a test about to fail would reach.
#include "app/SignalShutdown.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <vector>

namespace leasehold::app {
namespace {

class SignalShutdownTest : public ::testing::Test {
 protected:
  boost::asio::io_context io;
  log::Logger logger{log::Format::kText, log::Level::kError};
  std::vector<std::string> calls;
};

TEST_F(SignalShutdownTest, TheFirstSignalRunsTheSequenceThenTheAfterwardsStep) {
  std::function<void()> finish;
  SignalShutdown signals(
      io, logger,
      [&](std::function<void()> finished) {
        calls.push_back("sequence");
        finish = std::move(finished);
      },
      [&] { calls.push_back("afterwards"); });
  signals.setSecondSignalHandler([&](int) { calls.push_back("second"); });
  boost::asio::post(io, [] { ::raise(SIGTERM); });
  while (calls.empty() && io.run_one() > 0) {
  }
  ASSERT_EQ(calls, (std::vector<std::string>{"sequence"}));
  finish();
  EXPECT_EQ(calls, (std::vector<std::string>{"sequence", "afterwards"}));
  // No signal is awaited any more: the loop runs out of work (the cancelled wait's handler is
  // all that is left) instead of waiting out the bound.
  io.restart();
  io.run_for(std::chrono::seconds(10));
  EXPECT_TRUE(io.stopped());
  EXPECT_EQ(calls, (std::vector<std::string>{"sequence", "afterwards"}));
}

TEST_F(SignalShutdownTest, ASecondSignalWhileTheSequenceRunsGoesToTheSecondSignalHandler) {
  std::vector<int> second;
  SignalShutdown signals(
      io, logger, [&](std::function<void()>) { calls.push_back("sequence"); },
      [&] { calls.push_back("afterwards"); });
  signals.setSecondSignalHandler([&](int signo) {
    second.push_back(signo);
    if (second.size() == 2) io.stop();
  });
  boost::asio::post(io, [] { ::raise(SIGINT); });
  while (calls.empty() && io.run_one() > 0) {
  }
  boost::asio::post(io, [] { ::raise(SIGTERM); });
  boost::asio::post(io, [] { ::raise(SIGINT); });
  io.run();
  EXPECT_EQ(calls, (std::vector<std::string>{"sequence"}));
  EXPECT_EQ(second, (std::vector<int>{SIGTERM, SIGINT}));
}

}  // namespace
}  // namespace leasehold::app

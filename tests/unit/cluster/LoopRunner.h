#pragma once
// A real io_context for the tests that run real child processes (AsyncProcessLauncher, the exec
// plugin end to end): runs it until a condition holds, within a generous bound so that a slow,
// busy machine does not fail them.
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>

#include "cluster/TokenSource.h"

namespace leasehold::cluster {

class LoopRunner {
 public:
  static constexpr std::chrono::seconds kBound{30};

  // False when `done` still does not hold after `bound`.
  bool runUntil(const std::function<bool()>& done,
                std::chrono::steady_clock::duration bound = kBound) {
    const auto end = std::chrono::steady_clock::now() + bound;
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      io.run_one_for(std::chrono::milliseconds(20));
      if (io.stopped()) io.restart();
    }
    return true;
  }
  // Runs whatever is ready or becomes ready within `period` (a process being reaped, ...).
  void runFor(std::chrono::steady_clock::duration period) {
    const auto end = std::chrono::steady_clock::now() + period;
    while (std::chrono::steady_clock::now() < end) {
      io.run_one_for(std::chrono::milliseconds(10));
      if (io.stopped()) io.restart();
    }
  }

  // What a request would send: waits (on the loop) until the source has an answer, then asks.
  TokenResult usableToken(TokenSource& source) {
    bool ready = false;
    source.whenUsable(kBound, [&ready](const TokenWait&) { ready = true; });
    runUntil([&ready] { return ready; });
    return source.token();
  }

  boost::asio::io_context io;
};

}  // namespace leasehold::cluster

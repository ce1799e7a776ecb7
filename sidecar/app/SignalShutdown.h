#pragma once
// SIGTERM and SIGINT on the event loop. The first signal starts the shutdown sequence the owner
// gives (lock::Sidecar::shutdown, which releases the lease); a second one while that runs calls
// onSecondSignal (by default: exit at once with status 1, the operator's "stop now").
#include <boost/asio/signal_set.hpp>
#include <functional>

#include "log/Logger.h"

namespace leasehold::app {

class SignalShutdown {
 public:
  using Sequence = std::function<void(std::function<void()> finished)>;
  // `sequence` runs on the first signal; once it calls `finished`, `afterwards` runs (stop the
  // servers and the loop) and no more signals are awaited.
  SignalShutdown(boost::asio::io_context& io, const log::Logger& logger, Sequence sequence,
                 std::function<void()> afterwards);
  void setSecondSignalHandler(std::function<void(int signo)> f) { second_ = std::move(f); }
  // The signal that started the sequence (0 before one came): run mode forwards it.
  int firstSignal() const { return first_; }

 private:
  void await();

  boost::asio::signal_set signals_;
  const log::Logger& logger_;
  Sequence sequence_;
  std::function<void()> afterwards_;
  std::function<void(int)> second_;
  bool running_ = false;
  int first_ = 0;
};

}  // namespace leasehold::app

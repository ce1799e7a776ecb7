#include "app/SignalShutdown.h"

#include <signal.h>
#include <unistd.h>

#include <string>

namespace leasehold::app {

SignalShutdown::SignalShutdown(boost::asio::io_context& io, const log::Logger& logger,
                               Sequence sequence, std::function<void()> afterwards)
    : signals_(io, SIGTERM, SIGINT),
      logger_(logger),
      sequence_(std::move(sequence)),
      afterwards_(std::move(afterwards)),
      second_([this](int signo) {
        logger_.warn("second signal: exiting at once", {{"signal", std::to_string(signo)}});
        ::_exit(1);
      }) {
  await();
}

void SignalShutdown::await() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    if (running_) {
      await();
      second_(signo);
      return;
    }
    running_ = true;
    first_ = signo;
    logger_.info("shutting down: releasing the lease", {{"signal", std::to_string(signo)}});
    await();
    sequence_([this] {
      signals_.cancel();
      afterwards_();
    });
  });
}

}  // namespace leasehold::app

#pragma once
// A process's SIGTERM and SIGINT, the same for one Lease (SidecarProcess, with RunMode in run
// mode) and for a shard group (ShardProcess, with RunMode running one command per shard): the first
// signal starts the owner's shutdown (which releases the Leases), and `stopEverything` runs once it
// is done (app::SignalShutdown). In run mode the commands hear of the signal first (noteSignal:
// they drain from that instant, not once the owner's shutdown reaches them, which may be after an
// API round trip), and run mode's part applies (attachRunModeSignals): a second signal kills
// every command's group at once (their releases follow); with none left it exits at once, with
// the commands' status if one failed. When the commands end on their own (--restart never), the
// ordinary shutdown runs.
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <string>

#include "app/SignalShutdown.h"
#include "log/Logger.h"

namespace leasehold::app {

template <class Mode>
void attachRunModeSignals(SignalShutdown& signals, Mode& mode, const log::Logger& logger,
                          std::function<void()> shutdown) {
  signals.setSecondSignalHandler([&mode, &logger](int signo) {
    if (mode.secondSignal(signo)) return;
    logger.warn("second signal: exiting at once", {{"signal", std::to_string(signo)}});
    ::_exit(mode.exitCode() != 0 ? mode.exitCode() : 1);
  });
  mode.setShutdownRequest(std::move(shutdown));
}

// `mode` is null outside run mode; it and `logger` outlive this object.
template <class Mode>
class ProcessSignals {
 public:
  ProcessSignals(boost::asio::io_context& io, const log::Logger& logger, Mode* mode,
                 SignalShutdown::Sequence shutdown, std::function<void()> stopEverything)
      : mode_(mode),
        shutdown_(std::move(shutdown)),
        signals_(
            io, logger,
            [this](std::function<void()> finished) {
              if (mode_) mode_->noteSignal(signals_.firstSignal());
              shutdown_(std::move(finished));
            },
            stopEverything) {
    if (mode_) {
      attachRunModeSignals(signals_, *mode_, logger,
                           [this, stop = std::move(stopEverything)] { shutdown_(stop); });
    }
  }
  ProcessSignals(const ProcessSignals&) = delete;
  ProcessSignals& operator=(const ProcessSignals&) = delete;

 private:
  Mode* mode_;
  SignalShutdown::Sequence shutdown_;
  SignalShutdown signals_;
};

}  // namespace leasehold::app

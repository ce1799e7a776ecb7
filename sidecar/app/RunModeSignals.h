#pragma once
// Run mode's part of SIGTERM/SIGINT, the same for one command (RunMode) and for one command per
// shard (ShardRunMode): a second signal kills every command's group at once (their releases
// follow); with none left it exits at once, with the commands' status if one failed. When the
// commands end on their own (--restart never), `shutdown` runs the ordinary shutdown.
#include <unistd.h>

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

}  // namespace leasehold::app

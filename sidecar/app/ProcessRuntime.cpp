#include "app/ProcessRuntime.h"

#include <boost/asio/post.hpp>
#include <cstdio>

#include "runtime/ResidentCode.h"

namespace leasehold::app {

LoopRuntime::LoopRuntime(const log::Logger& logger)
    : worker([this](auto f) { boost::asio::post(io, std::move(f)); }) {
  if (clock.rate() != 1.0) {
    logger.warn("TEST HOOK ACTIVE: scaled monotonic clock",
                {{"rate", std::to_string(clock.rate())}});
  }
}

ProcessRuntime::ProcessRuntime(const cluster::RestConfig& rest, const log::Logger& logger)
    : LoopRuntime(logger),
      api(io, rest, std::string("leasehold/") + LEASEHOLD_VERSION, metrics, logger, worker) {}

std::function<double()> LoopRuntime::random01() {
  return [this] { return std::uniform_real_distribution<double>(0, 1)(rng); };
}

void LoopRuntime::run() {
  runtime::keepOnlyTouchedCodeResident();
  const auto settled = runtime::keepOnlyTouchedCodeResidentAfter(clock, runtime::kStartupOver);
  io.run();
}

int failToStart(const std::string& message) {
  std::fprintf(stderr, "leasehold: %s\n", message.c_str());
  return 2;
}

}  // namespace leasehold::app

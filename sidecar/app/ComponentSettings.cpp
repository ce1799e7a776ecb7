#include "app/ComponentSettings.h"

#include <algorithm>

namespace leasehold::app {

log::Logger loggerFor(const config::Config& cfg) {
  using config::LogLevel;
  const auto level = cfg.logLevel == LogLevel::Debug   ? log::Level::kDebug
                     : cfg.logLevel == LogLevel::Warn  ? log::Level::kWarn
                     : cfg.logLevel == LogLevel::Error ? log::Level::kError
                                                       : log::Level::kInfo;
  return log::Logger(
      cfg.logFormat == config::LogFormat::Json ? log::Format::kJson : log::Format::kText, level);
}

std::chrono::milliseconds renewalRequestDeadline(const election::ElectionTimings& timings) {
  return timings.requestDeadline();
}

// Where the lock is, as an operator names it (election::LockName::qualified).
std::string leaseVariable(const publish::LeaseName& lease) {
  return lease.qualified;
}

supervise::SupervisorConfig supervisorConfigFor(const config::Config& cfg,
                                                const publish::LeaseName& lease) {
  using config::RestartPolicy;
  supervise::SupervisorConfig c;
  c.command = cfg.command;
  c.lease = leaseVariable(lease);
  c.identity = cfg.identity;
  c.killGrace = cfg.killGrace;
  c.drainTimeout = cfg.drainTimeout;
  c.restart = cfg.restart == RestartPolicy::Always      ? supervise::RestartPolicy::kAlways
              : cfg.restart == RestartPolicy::OnFailure ? supervise::RestartPolicy::kOnFailure
                                                        : supervise::RestartPolicy::kNever;
  c.exitOnLoss = cfg.exitOnLoss;
  return c;
}

}  // namespace leasehold::app

#pragma once
// What the parsed configuration means for the components that do not read config::Config
// themselves, once for every process kind (one lock, a shard group; either store).
#include <chrono>
#include <string>

#include "config/Config.h"
#include "election/ElectionTimings.h"
#include "log/Logger.h"
#include "publish/LeadershipJson.h"
#include "supervise/Supervisor.h"

namespace leasehold::app {

// --log-format and --log-level.
log::Logger loggerFor(const config::Config& cfg);

// A renewal that hangs past the renew deadline is useless: every request on the Lease's
// connection ends by half of R, within [0.5 s, 5 s].
std::chrono::milliseconds renewalRequestDeadline(const election::ElectionTimings& timings);

// LEASEHOLD_LEASE: "namespace/name" for a Lease, the election's name on etcd.
std::string leaseVariable(const publish::LeaseName& lease);

// leasehold run's settings for the command supervised on `lease`'s behalf.
supervise::SupervisorConfig supervisorConfigFor(const config::Config& cfg,
                                                const publish::LeaseName& lease);

}  // namespace leasehold::app

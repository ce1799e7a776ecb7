#pragma once
// What the supervisor tells its watchdog, one fixed-size record per write on a pipe (16 bytes,
// under PIPE_BUF, so each write arrives whole): kill process group `group` at `killAtNs` on
// CLOCK_BOOTTIME, the monotonic clock every process of the machine shares (it keeps counting
// through suspend), unless a newer order for that group comes first. killAtNs 0: stand down
// for that group; group 0: stand down for every group. Several groups may be guarded at once
// (run mode with --shards: one per owned shard), each at its own instant (WatchdogGuards).
#include <cstdint>

namespace leasehold::supervise {

struct WatchdogOrder {
  std::int64_t group = 0;
  std::int64_t killAtNs = 0;
};
static_assert(sizeof(WatchdogOrder) == 16);

// The descriptor the watchdog process reads its orders from.
inline constexpr int kWatchdogOrderFd = 3;
// argv[1] of the watchdog process (the leasehold binary, executed again).
inline constexpr const char* kWatchdogArgument = "__watchdog";

}  // namespace leasehold::supervise

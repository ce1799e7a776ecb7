#pragma once
// Time types shared by the election core.
//
// MonoTime is the only time used for intervals and expiry. Its clock is CLOCK_BOOTTIME: unlike
// CLOCK_MONOTONIC it keeps counting while the machine is suspended, so a suspended leader wakes
// up with its deadline already behind it. WallTime is only for timestamps written into the Lease
// and shown to people; it is kept at microsecond precision because that is what a Lease stores.
#include <chrono>
#include <cstdint>
#include <string>

namespace leasehold::time {

using Duration = std::chrono::nanoseconds;

struct BootClock {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<BootClock, duration>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept;
};

using MonoTime = BootClock::time_point;
using WallTime = std::chrono::sys_time<std::chrono::microseconds>;

// "15s", "500ms", "1.5s", "2m": the form the flags accept, for messages.
std::string formatDuration(Duration d);

// Wall time as a Kubernetes MicroTime: UTC, six fractional digits, Z.
std::string formatMicroTime(WallTime t);

}  // namespace leasehold::time

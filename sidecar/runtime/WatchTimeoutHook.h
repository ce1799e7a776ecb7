#pragma once
// Test hook, short watches: a test that checks watch rotation cannot wait the 5-10 minutes a
// watch lasts. With BOTH LEASEHOLD_TEST_HOOKS=1 and LEASEHOLD_WATCH_TIMEOUT_SECONDS=<1..3600> in
// the environment, watches ask the server for that timeoutSeconds instead of 300 (randomised up
// to twice it, as always). As with the clock-rate hook (AsioClock.h), the value alone is ignored
// with a warning, an active hook prints a loud one, and -DLEASEHOLD_NO_TEST_HOOKS never reads it.
#include <optional>
#include <string>

namespace leasehold::runtime {

struct WatchTimeoutHook {
  std::optional<int> seconds;  // nullopt: use the default
  std::string message;         // what to print at start (empty when nothing was asked for)
};

// Pure: `value` is LEASEHOLD_WATCH_TIMEOUT_SECONDS, `hooksValue` LEASEHOLD_TEST_HOOKS (null when
// unset).
WatchTimeoutHook parseWatchTimeoutHook(const char* value, const char* hooksValue);

// From the process environment (nothing at all in a -DLEASEHOLD_NO_TEST_HOOKS build).
WatchTimeoutHook watchTimeoutHookFromEnvironment();

}  // namespace leasehold::runtime

#include "runtime/WatchTimeoutHook.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace leasehold::runtime {

WatchTimeoutHook parseWatchTimeoutHook(const char* value, const char* hooksValue) {
  if (value == nullptr || *value == '\0') return {};
  const std::string shown = std::string("LEASEHOLD_WATCH_TIMEOUT_SECONDS=") + value;
  if (hooksValue == nullptr || std::strcmp(hooksValue, "1") != 0) {
    return {std::nullopt, "leasehold: warning: " + shown +
                              " ignored: it is a test hook and needs LEASEHOLD_TEST_HOOKS=1 as "
                              "well; watches last 300-600 s"};
  }
  int seconds = 0;
  const char* end = value + std::strlen(value);
  const auto [ptr, ec] = std::from_chars(value, end, seconds);
  if (ec != std::errc() || ptr != end || seconds < 1 || seconds > 3600) {
    return {std::nullopt, "leasehold: WARNING: TEST HOOK: " + shown +
                              " is not a whole number of seconds in [1, 3600]: ignored, watches "
                              "last 300-600 s"};
  }
  return {seconds, "leasehold: WARNING: TEST HOOK ACTIVE (LEASEHOLD_TEST_HOOKS=1): " + shown +
                       ": watches end after " + std::to_string(seconds) + "-" +
                       std::to_string(2 * seconds) +
                       " s. This is for tests only; never set LEASEHOLD_TEST_HOOKS in production."};
}

WatchTimeoutHook watchTimeoutHookFromEnvironment() {
#ifdef LEASEHOLD_NO_TEST_HOOKS
  return {};
#else
  return parseWatchTimeoutHook(std::getenv("LEASEHOLD_WATCH_TIMEOUT_SECONDS"),
                               std::getenv("LEASEHOLD_TEST_HOOKS"));
#endif
}

}  // namespace leasehold::runtime

// Duration strings (flags, environment, config file): config::DurationParser::parse on arbitrary
// bytes. A duration that parses is never negative, and time::formatDuration (used by
// --print-config and in messages) writes it so that it parses back to the same value (not only
// for whole milliseconds).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "FuzzCheck.h"
#include "config/DurationParser.h"
#include "time/Time.h"

using namespace leasehold;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parsed = config::DurationParser::parse(text);
  if (const auto* error = std::get_if<config::ConfigError>(&parsed)) {
    FUZZ_CHECK(!error->message.empty(), "a rejected duration without a message");
    return 0;
  }
  const time::Duration value = std::get<time::Duration>(parsed);
  FUZZ_CHECK(value.count() >= 0, "a negative duration from \"" + std::string(text) + "\"");
  const std::string formatted = time::formatDuration(value);
  const auto again = config::DurationParser::parse(formatted);
  const auto* reparsed = std::get_if<time::Duration>(&again);
  FUZZ_CHECK(reparsed && *reparsed == value,
             "\"" + std::string(text) + "\" = " + std::to_string(value.count()) +
                 "ns formats as \"" + formatted + "\", which parses as " +
                 (reparsed ? std::to_string(reparsed->count()) + "ns"
                           : std::get<config::ConfigError>(again).message));
  return 0;
}

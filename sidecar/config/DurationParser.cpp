#include "config/DurationParser.h"

#include <cstdint>
#include <limits>
#include <string>

namespace leasehold::config {

namespace {

constexpr const char* kExpected = "expected a number and a unit (ns, us, ms, s, m, h), e.g. 15s";

ConfigError invalid(std::string_view text, const std::string& why) {
  return ConfigError{"invalid duration \"" + std::string(text) + "\": " + why};
}

// Nanoseconds per unit, or 0 when `unit` is not one.
std::uint64_t unitNanoseconds(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\xC2\xB5s" /* µ micro sign */ || unit == "\xCE\xBCs" /* μ mu */) {
    return 1000;
  }
  if (unit == "ms") return 1000 * 1000;
  if (unit == "s") return 1000ULL * 1000 * 1000;
  if (unit == "m") return 60ULL * 1000 * 1000 * 1000;
  if (unit == "h") return 3600ULL * 1000 * 1000 * 1000;
  return 0;
}

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

std::variant<time::Duration, ConfigError> DurationParser::parse(std::string_view text) {
  if (text.empty()) return invalid(text, std::string("empty; ") + kExpected);
  if (text == "0") return time::Duration::zero();
  if (text.front() == '-') return invalid(text, "must not be negative");
  if (text.front() == '+') return invalid(text, kExpected);

  // Same arithmetic as Go's time.ParseDuration: exact integers, the fraction scaled per unit.
  constexpr std::uint64_t kLimit =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t total = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::uint64_t whole = 0;
    const std::size_t wholeStart = pos;
    while (pos < text.size() && isDigit(text[pos])) {
      if (whole > kLimit / 10) return invalid(text, "too large");
      whole = whole * 10 + static_cast<std::uint64_t>(text[pos] - '0');
      if (whole > kLimit) return invalid(text, "too large");
      ++pos;
    }
    const bool haveWhole = pos > wholeStart;
    std::uint64_t fraction = 0;
    double scale = 1;
    bool haveFraction = false;
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      const std::size_t fractionStart = pos;
      while (pos < text.size() && isDigit(text[pos])) {
        // Digits beyond what 63 bits hold cannot change the result at nanosecond precision.
        if (fraction <= kLimit / 10) {
          fraction = fraction * 10 + static_cast<std::uint64_t>(text[pos] - '0');
          scale *= 10;
        }
        ++pos;
      }
      haveFraction = pos > fractionStart;
    }
    if (!haveWhole && !haveFraction) return invalid(text, kExpected);

    const std::size_t unitStart = pos;
    while (pos < text.size() && text[pos] != '.' && !isDigit(text[pos]))
      ++pos;
    const std::string_view unit = text.substr(unitStart, pos - unitStart);
    if (unit.empty()) {
      return invalid(text,
                     "missing unit (ns, us, ms, s, m, h), e.g. \"" + std::string(text) + "s\"");
    }
    const std::uint64_t perUnit = unitNanoseconds(unit);
    if (perUnit == 0) {
      return invalid(text, "unknown unit \"" + std::string(unit) + "\" (use ns, us, ms, s, m, h)");
    }
    if (whole > kLimit / perUnit) return invalid(text, "too large");
    std::uint64_t value = whole * perUnit;
    if (fraction > 0) {
      value += static_cast<std::uint64_t>(static_cast<double>(fraction) *
                                          (static_cast<double>(perUnit) / scale));
      if (value > kLimit) return invalid(text, "too large");
    }
    if (value > kLimit - total) return invalid(text, "too large");
    total += value;
  }
  return time::Duration(static_cast<std::int64_t>(total));
}

}  // namespace leasehold::config

#include "config/DurationParser.h"

#include <gtest/gtest.h>

namespace leasehold::config {
namespace {

using namespace std::chrono_literals;
using time::Duration;

struct GoodDuration {
  const char* text;
  Duration expected;
};

class DurationParserGood : public testing::TestWithParam<GoodDuration> {};

TEST_P(DurationParserGood, Parses) {
  const auto result = DurationParser::parse(GetParam().text);
  ASSERT_TRUE(std::holds_alternative<Duration>(result))
      << GetParam().text << ": " << std::get<ConfigError>(result).message;
  EXPECT_EQ(std::get<Duration>(result), GetParam().expected) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    Table, DurationParserGood,
    testing::Values(GoodDuration{"0", 0s}, GoodDuration{"0s", 0s}, GoodDuration{"500ms", 500ms},
                    GoodDuration{"15s", 15s}, GoodDuration{"1m", 1min}, GoodDuration{"1m30s", 90s},
                    GoodDuration{"1.5s", 1500ms}, GoodDuration{"2h", 2h},
                    GoodDuration{"1h2m3s4ms5us6ns", 1h + 2min + 3s + 4ms + 5us + 6ns},
                    GoodDuration{"100ns", 100ns}, GoodDuration{"7us", 7us},
                    GoodDuration{"7\xC2\xB5s", 7us}, GoodDuration{"7\xCE\xBCs", 7us},
                    GoodDuration{".5s", 500ms}, GoodDuration{"1.s", 1s},
                    GoodDuration{"0.001s", 1ms}, GoodDuration{"1.000000001s", 1s + 1ns},
                    GoodDuration{"2562047h", 2562047h},
                    GoodDuration{"9223372036854775807ns", Duration(INT64_MAX)}));

struct BadDuration {
  const char* text;
  const char* mentions;
};

void PrintTo(const BadDuration& c, std::ostream* os) {
  *os << '"' << c.text << '"';
}
void PrintTo(const GoodDuration& c, std::ostream* os) {
  *os << '"' << c.text << '"';
}

class DurationParserBad : public testing::TestWithParam<BadDuration> {};

TEST_P(DurationParserBad, RejectsWithMessage) {
  const auto result = DurationParser::parse(GetParam().text);
  ASSERT_TRUE(std::holds_alternative<ConfigError>(result)) << GetParam().text;
  const auto& message = std::get<ConfigError>(result).message;
  EXPECT_NE(message.find(GetParam().mentions), std::string::npos) << message;
  EXPECT_NE(message.find(std::string("\"") + GetParam().text + "\""), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, DurationParserBad,
    testing::Values(BadDuration{"", "empty"}, BadDuration{"-1s", "negative"},
                    BadDuration{"15", "missing unit"}, BadDuration{"1.5", "missing unit"},
                    BadDuration{"1m30", "missing unit"}, BadDuration{"abc", "expected a number"},
                    BadDuration{"5x", "unknown unit \"x\""}, BadDuration{"5sec", "unknown unit"},
                    BadDuration{"s", "expected a number"}, BadDuration{".s", "expected a number"},
                    BadDuration{"+5s", "expected a number"},
                    BadDuration{" 5s", "expected a number"}, BadDuration{"5s ", "unknown unit"},
                    BadDuration{"9223372036854775808ns", "too large"},
                    BadDuration{"2562048h", "too large"},
                    BadDuration{"99999999999999999999s", "too large"},
                    BadDuration{"2562047h2562047h", "too large"}));

}  // namespace
}  // namespace leasehold::config

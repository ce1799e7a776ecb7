#include "log/Logger.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace leasehold::log {
namespace {

TEST(LoggerTest, JsonLinesAreOneObjectWithTheFields) {
  Logger logger(Format::kJson, Level::kInfo);
  const std::string line = logger.format(Level::kWarn, "renewal failed",
                                         {{"holder", "web-0_\"x\""}, {"detail", "a\nb\t\x01"}},
                                         "2026-11-30T10:00:00.000000Z");
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one line per event";
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j.at("ts"), "2026-11-30T10:00:00.000000Z");
  EXPECT_EQ(j.at("level"), "warn");
  EXPECT_EQ(j.at("msg"), "renewal failed");
  EXPECT_EQ(j.at("holder"), "web-0_\"x\"");
  EXPECT_EQ(j.at("detail"), "a\nb\t\x01");
}

TEST(LoggerTest, TextQuotesValuesThatNeedIt) {
  Logger logger(Format::kText, Level::kInfo);
  EXPECT_EQ(logger.format(Level::kInfo, "became leader", {{"holder", "a"}, {"detail", "x y"}}, "T"),
            "T info became leader holder=a detail=\"x y\"");
}

TEST(LoggerTest, LevelsBelowTheMinimumAreDropped) {
  Logger logger(Format::kText, Level::kWarn);
  EXPECT_FALSE(logger.enabled(Level::kInfo));
  EXPECT_TRUE(logger.enabled(Level::kError));
}

}  // namespace
}  // namespace leasehold::log

// Ages as kubectl prints them (apimachinery's duration.HumanDuration), at each boundary.
#include "kubectl/HumanDuration.h"

#include <gtest/gtest.h>

namespace leasehold::kubectl {
namespace {

using namespace std::chrono_literals;

TEST(HumanDurationTest, AsKubectl) {
  const std::vector<std::pair<std::chrono::nanoseconds, std::string>> cases{
      {-3s, "<invalid>"},
      {-2s, "<invalid>"},
      {-1500ms, "0s"},
      {-1s, "0s"},
      {-10ms, "0s"},
      {0s, "0s"},
      {999ms, "0s"},
      {5s, "5s"},
      {119s, "119s"},
      {120s, "2m"},
      {200s, "3m20s"},
      {9min + 59s, "9m59s"},
      {10min, "10m"},
      {179min, "179m"},
      {3h, "3h"},
      {2h * 3 + 5min * 3, "6h15m"},
      {7h + 59min, "7h59m"},
      {8h, "8h"},
      {47h, "47h"},
      {48h, "2d"},
      {76h, "3d4h"},
      {24h * 8, "8d"},
      {24h * 729, "729d"},
      {24h * 730, "2y"},
      {24h * 740, "2y10d"},
      {24h * 365 * 8, "8y"},
      {24h * 365 * 20, "20y"},
  };
  for (const auto& [d, want] : cases) {
    EXPECT_EQ(HumanDuration::format(d), want) << d.count() << "ns";
  }
}

}  // namespace
}  // namespace leasehold::kubectl

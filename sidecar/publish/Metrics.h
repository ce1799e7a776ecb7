#pragma once
// Prometheus text exposition of the names in design.md section 3. Counters are fed by the
// elector's events and the API client; gauges are read from the elector at scrape time.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "election/Leadership.h"

namespace leasehold::publish {

class Metrics {
 public:
  Metrics();

  void leaderChanged() { leaderChanges_++; }
  void acquired() { acquisitions_++; }
  void renewal(bool ok, double seconds);
  void apiRequest(const std::string& verb, int code) { api_[{verb, code}]++; }

  // More families, rendered at scrape time after the others (shard mode's leasehold_shard_*).
  void setExtra(std::function<std::string()> extra) { extra_ = std::move(extra); }

  // The whole exposition, with the leadership as it is now and process_* from /proc.
  std::string render(const election::Leadership& now) const;

 private:
  static constexpr std::array<double, 11> kBuckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                   0.5,   1.0,  2.5,   5.0,  10.0};
  std::uint64_t leaderChanges_ = 0;
  std::uint64_t acquisitions_ = 0;
  std::uint64_t renewOk_ = 0;
  std::uint64_t renewFailed_ = 0;
  std::array<std::uint64_t, kBuckets.size()> renewBuckets_{};
  std::uint64_t renewCount_ = 0;
  double renewSum_ = 0;
  std::map<std::pair<std::string, int>, std::uint64_t> api_;
  double startTimeSeconds_;
  std::function<std::string()> extra_;
};

}  // namespace leasehold::publish

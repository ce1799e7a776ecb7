// The control API's fault rules, in the order they were added, and the choice of the rule a
// request gets: every matching latency rule adds its delay, the first matching other rule wins;
// a rule whose count runs out is removed.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "faults/FaultRule.h"
#include "http/RequestInfo.h"
#include "json/Json.h"

namespace apiserver {

class FaultRules {
 public:
  const FaultRule& add(FaultRule f);  // gives it the next id
  void remove(int id);
  void clear() { rules_.clear(); }
  J to_json() const;  // the rules as an array

  // The rule for this request, or null; adds the matching latency rules' ms to latency_ms. The
  // pointer is valid until the next call.
  const FaultRule* pick(const RequestInfo& info, const std::string& ua, int& latency_ms);

 private:
  std::vector<FaultRule> rules_;
  int next_id_ = 1;
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace apiserver

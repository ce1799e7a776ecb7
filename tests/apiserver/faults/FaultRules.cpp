// Fault rule matching (see FaultRules.h).
#include "faults/FaultRules.h"

#include <algorithm>

namespace apiserver {

namespace {

bool glob_eq(const std::string& pattern, const std::string& v) {
  return pattern.empty() || pattern == "*" || pattern == v;
}

}  // namespace

const FaultRule& FaultRules::add(FaultRule f) {
  f.id = next_id_++;
  rules_.push_back(f);
  return rules_.back();
}

void FaultRules::remove(int id) {
  rules_.erase(
      std::remove_if(rules_.begin(), rules_.end(), [&](const FaultRule& f) { return f.id == id; }),
      rules_.end());
}

J FaultRules::to_json() const {
  J arr = J::array();
  for (auto& f : rules_)
    arr.push_back(f.to_json());
  return arr;
}

const FaultRule* FaultRules::pick(const RequestInfo& info, const std::string& ua, int& latency_ms) {
  const FaultRule* chosen = nullptr;
  std::string client = client_of(info);
  for (auto it = rules_.begin(); it != rules_.end();) {
    FaultRule& f = *it;
    bool match = glob_eq(f.client, client) && glob_eq(f.verb, info.verb) &&
                 glob_eq(f.resource, info.resource) && glob_eq(f.name, info.name) &&
                 (f.user_agent.empty() || ua.rfind(f.user_agent, 0) == 0) &&
                 (info.resource_request || f.resource == "*");
    if (match && f.probability < 1.0) {
      std::uniform_real_distribution<double> d(0, 1);
      match = d(rng_) < f.probability;
    }
    if (!match || (chosen && f.action != "latency")) {
      ++it;
      continue;
    }
    if (f.action == "latency")
      latency_ms += f.ms;
    else
      chosen = &f;
    if (f.count > 0 && --f.count == 0) {
      // keep a copy of the chosen one alive until used: store in static
      static FaultRule last;
      if (chosen == &f) {
        last = f;
        chosen = &last;
      }
      it = rules_.erase(it);
      continue;
    }
    ++it;
  }
  return chosen;
}

}  // namespace apiserver

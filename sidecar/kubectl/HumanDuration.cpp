#include "kubectl/HumanDuration.h"

namespace leasehold::kubectl {

std::string HumanDuration::format(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  const auto s = [](long long v) { return std::to_string(v); };
  // Go's int(d.Seconds()) truncates toward zero, so -1.5s is -1 ("0s") and -2s "<invalid>".
  const long long seconds = duration_cast<std::chrono::seconds>(d).count();
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return s(seconds) + "s";
  const long long minutes = seconds / 60;
  if (minutes < 10) {
    const long long rest = seconds % 60;
    return rest == 0 ? s(minutes) + "m" : s(minutes) + "m" + s(rest) + "s";
  }
  if (minutes < 60 * 3) return s(minutes) + "m";
  const long long hours = minutes / 60;
  if (hours < 8) {
    const long long rest = minutes % 60;
    return rest == 0 ? s(hours) + "h" : s(hours) + "h" + s(rest) + "m";
  }
  if (hours < 48) return s(hours) + "h";
  if (hours < 24 * 8) {
    const long long rest = hours % 24;
    return rest == 0 ? s(hours / 24) + "d" : s(hours / 24) + "d" + s(rest) + "h";
  }
  if (hours < 24 * 365 * 2) return s(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const long long rest = (hours / 24) % 365;
    return rest == 0 ? s(hours / 24 / 365) + "y" : s(hours / 24 / 365) + "y" + s(rest) + "d";
  }
  return s(hours / 24 / 365) + "y";
}

}  // namespace leasehold::kubectl

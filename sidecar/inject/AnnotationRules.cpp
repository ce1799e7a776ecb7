#include "inject/AnnotationRules.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <variant>

#include "config/DurationParser.h"
#include "config/KubernetesNameRules.h"

namespace leasehold::inject {

namespace {

constexpr const char* kLease = "leasehold.io/lease";
constexpr const char* kLeaseDuration = "leasehold.io/lease-duration";
constexpr const char* kRenewDeadline = "leasehold.io/renew-deadline";
constexpr const char* kRetryPeriod = "leasehold.io/retry-period";
constexpr const char* kShards = "leasehold.io/shards";
constexpr const char* kFastFailover = "leasehold.io/fast-failover";

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

std::string valueOr(const Annotations& notes, const char* key, const std::string& fallback) {
  const auto it = notes.find(key);
  return it == notes.end() ? fallback : it->second;
}

const std::string* find(const Annotations& notes, const char* key) {
  const auto it = notes.find(key);
  return it == notes.end() ? nullptr : &it->second;
}

// (number unit)+ where the number is digits with an optional fraction, or a fraction alone, and
// the units are the ones `units` lists, longest first. A unit is taken greedily: the next part
// must start with a digit or '.', so a shorter unit ("m" for "ms") never fits where a longer one
// does.
bool matchesUnits(std::string_view text, bool fractions,
                  std::initializer_list<std::string_view> units) {
  if (text.empty()) return false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t start = pos;
    while (pos < text.size() && isDigit(text[pos]))
      ++pos;
    const bool whole = pos > start;
    if (fractions && pos < text.size() && text[pos] == '.') {
      ++pos;
      const std::size_t fractionStart = pos;
      while (pos < text.size() && isDigit(text[pos]))
        ++pos;
      if (!whole && pos == fractionStart) return false;
    } else if (!whole) {
      return false;
    }
    bool unit = false;
    for (const auto candidate : units) {
      if (text.substr(pos, candidate.size()) == candidate) {
        pos += candidate.size();
        unit = true;
        break;
      }
    }
    if (!unit) return false;
  }
  return true;
}

// The duration in nanoseconds as CEL's duration() reads it (Go's time.ParseDuration), for
// strings that matched a pattern above; nothing when out of range.
std::optional<std::int64_t> nanoseconds(const std::string& text) {
  const auto parsed = config::DurationParser::parse(text);
  if (const auto* d = std::get_if<time::Duration>(&parsed)) return d->count();
  return std::nullopt;
}

}  // namespace

bool AnnotationRules::isDuration(const std::string& text) {
  return matchesUnits(text, true, {"ns", "us", "\xC2\xB5s", "ms", "s", "m", "h"});
}

bool AnnotationRules::isWholeSeconds(const std::string& text) {
  return matchesUnits(text, false, {"s", "m", "h"});
}

std::string AnnotationRules::leaseDuration(const Annotations& notes, const InjectorParams& params) {
  return valueOr(notes, kLeaseDuration, params.leaseDuration);
}

std::string AnnotationRules::renewDeadline(const Annotations& notes, const InjectorParams& params) {
  return valueOr(notes, kRenewDeadline, params.renewDeadline);
}

std::string AnnotationRules::retryPeriod(const Annotations& notes, const InjectorParams& params) {
  return valueOr(notes, kRetryPeriod, params.retryPeriod);
}

std::optional<std::string> AnnotationRules::refusal(const Annotations& notes,
                                                    const InjectorParams& params) {
  const std::string* lease = find(notes, kLease);
  if (!lease) {
    return std::string(
        "leasehold.io/inject is \"true\" but the annotation leasehold.io/lease (the name of the "
        "Lease the replicas compete for) is missing");
  }
  if (config::KubernetesNameRules::dns1123Subdomain(*lease)) {
    return "leasehold.io/lease: \"" + *lease +
           "\" is not a valid Lease name (a DNS subdomain: lower-case letters, digits, - and .)";
  }
  if (const auto* d = find(notes, kLeaseDuration); d && !isWholeSeconds(*d)) {
    return "leasehold.io/lease-duration: \"" + *d +
           "\" is not a duration in whole seconds (15s, 1m)";
  }
  if (const auto* r = find(notes, kRenewDeadline); r && !isDuration(*r)) {
    return "leasehold.io/renew-deadline: \"" + *r + "\" is not a duration (10s, 1.5s, 500ms)";
  }
  if (const auto* p = find(notes, kRetryPeriod); p && !isDuration(*p)) {
    return "leasehold.io/retry-period: \"" + *p + "\" is not a duration (2s, 1.5s, 500ms)";
  }
  const std::string d = leaseDuration(notes, params);
  const std::string r = renewDeadline(notes, params);
  const std::string p = retryPeriod(notes, params);
  // As the policy: the timing rule only where all three are well formed (a parameter that is
  // not is the ConfigMap's problem, not this pod's).
  if (isWholeSeconds(d) && isDuration(r) && isDuration(p)) {
    const auto dn = nanoseconds(d), rn = nanoseconds(r), pn = nanoseconds(p);
    if (dn && rn && pn) {
      if (*pn <= 0) {
        return "retry period " + p +
               " (leasehold.io/retry-period or the injector's default) must be greater than 0";
      }
      // CEL's getMilliseconds(): whole milliseconds, truncated.
      if ((*rn / 1000000) * 5 <= (*pn / 1000000) * 6) {
        return "renew deadline " + r + " must be greater than 1.2 x retry period " + p +
               " (leasehold.io/renew-deadline, leasehold.io/retry-period or the injector's "
               "defaults)";
      }
      if (*dn <= *rn) {
        return "lease duration " + d + " must be greater than renew deadline " + r +
               " (leasehold.io/lease-duration, leasehold.io/renew-deadline or the injector's "
               "defaults)";
      }
    }
  }
  if (const auto* s = find(notes, kShards)) {
    const bool digits = !s->empty() && s->size() <= 4 && (*s)[0] >= '1' && (*s)[0] <= '9' &&
                        std::all_of(s->begin(), s->end(), isDigit);
    if (!digits || std::stoi(*s) > 1024) {
      return "leasehold.io/shards: \"" + *s + "\" is not a whole number from 1 to 1024";
    }
  }
  if (const auto* f = find(notes, kFastFailover)) {
    if (*f != "true" && *f != "false") {
      return "leasehold.io/fast-failover: \"" + *f + "\" is not \"true\" or \"false\"";
    }
    if (*f == "true" && find(notes, kShards)) {
      return std::string("leasehold.io/fast-failover cannot be used with leasehold.io/shards");
    }
  }
  return std::nullopt;
}

bool AnnotationRules::fastFailover(const Annotations& notes) {
  const std::string* f = find(notes, kFastFailover);
  return f && *f == "true";
}

}  // namespace leasehold::inject

// One fault rule of the control API (POST /faults): which requests it matches (client = the
// authenticated user, User-Agent prefix, verb, resource, name; a probability) and what they get
// (latency, a Status error, the real 429, a malformed body, a drop, a hang), for how many.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "http/HttpMessage.h"
#include "json/Json.h"

namespace apiserver {

struct FaultRule {
  int id = 0;
  std::string action;  // latency error 429 malformed drop drop-after hang
  std::string client = "*", user_agent, verb = "*", resource = "*", name = "*";
  int status = 503;
  int ms = 0;
  int retry_after = 1;
  int64_t count = -1;
  double probability = 1.0;
  // The rule described by a POST /faults body; the error text for a 400 otherwise.
  static std::optional<std::string> from_json(const J& body, FaultRule& f);
  // The answer of an "error" or "429" rule.
  HttpResponse response() const;
  J to_json() const {
    return J{{"id", id},         {"action", action},
             {"client", client}, {"userAgent", user_agent},
             {"verb", verb},     {"resource", resource},
             {"name", name},     {"status", status},
             {"ms", ms},         {"retryAfter", retry_after},
             {"count", count},   {"probability", probability}};
  }
};

}  // namespace apiserver

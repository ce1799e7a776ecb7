// Fault rules (see FaultRule.h).
#include "faults/FaultRule.h"

#include <exception>
#include <set>

#include "http/StatusResponses.h"

namespace apiserver {

std::optional<std::string> FaultRule::from_json(const J& body, FaultRule& f) {
  if (!body.is_object()) return "body must be a JSON object";
  f.action = body.value("action", std::string());
  static const std::set<std::string> kActions = {"latency", "error",      "429", "malformed",
                                                 "drop",    "drop-after", "hang"};
  if (!kActions.count(f.action))
    return "action must be one of latency, error, 429, malformed, drop, drop-after, hang";
  try {
    f.client = body.value("client", std::string("*"));
    f.user_agent = body.value("userAgent", std::string());
    f.verb = body.value("verb", std::string("*"));
    f.resource = body.value("resource", std::string("*"));
    f.name = body.value("name", std::string("*"));
    f.status = body.value("status", 503);
    f.ms = body.value("ms", 0);
    f.retry_after = body.value("retryAfter", 1);
    f.count = body.value("count", int64_t{-1});
    f.probability = body.value("probability", 1.0);
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

HttpResponse FaultRule::response() const {
  HttpResponse r;
  if (action == "429") {
    r.status = 429;
    r.content_type = "text/plain; charset=utf-8";
    r.body = "Too many requests, please try again later.\n";
    r.headers.push_back({"Retry-After", std::to_string(retry_after)});
    return r;
  }
  r.status = status;
  std::string reason = "InternalError", msg = "Internal error occurred: injected fault";
  J details = J{{"causes", J::array({J{{"message", "injected fault"}}})}};
  if (status == 503) {
    reason = "ServiceUnavailable";
    msg = "the server is currently unable to handle the request";
    details = J::object();
  } else if (status == 504) {
    reason = "Timeout";
    msg = "Timeout: request did not complete within requested timeout - context deadline exceeded";
    details = J::object();
  } else if (status == 429) {
    reason = "TooManyRequests";
    msg = "injected throttling";
  }
  if (retry_after > 0 && (status == 503 || status == 429 || status == 504)) {
    r.headers.push_back({"Retry-After", std::to_string(retry_after)});
    details["retryAfterSeconds"] = retry_after;
  }
  r.body = status_json(status, reason, msg, &details);
  return r;
}

}  // namespace apiserver

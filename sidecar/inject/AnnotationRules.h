#pragma once
// The per-pod annotations checked as the chart's ValidatingAdmissionPolicy checks them
// (templates/injector.yaml): the same patterns, the same rule on the timings in effect (the
// annotation, else the parameter), the same messages in the same order, the first failing one
// is the refusal. leasehold.io/lease (the Lease's name), lease-duration (whole seconds),
// renew-deadline, retry-period (durations), then
// leaseDuration > renewDeadline > 1.2 x retryPeriod > 0, then shards (1 to 1024).
#include <map>
#include <optional>
#include <string>

#include "inject/InjectorParams.h"

namespace leasehold::inject {

using Annotations = std::map<std::string, std::string>;

class AnnotationRules {
 public:
  // Why the pod is refused, naming the annotation; nothing when it is admitted.
  static std::optional<std::string> refusal(const Annotations& notes, const InjectorParams& params);

  // The policy's two patterns (RE2 in the CEL): a Go duration with a unit on every number
  // ("1m30s", "1.5s", ".5h", "500µs"), and whole numbers of s, m or h ("15s", "1m").
  static bool isDuration(const std::string& text);
  static bool isWholeSeconds(const std::string& text);

  // The timings in effect: the annotation when the pod has it, else the parameter.
  static std::string leaseDuration(const Annotations& notes, const InjectorParams& params);
  static std::string renewDeadline(const Annotations& notes, const InjectorParams& params);
  static std::string retryPeriod(const Annotations& notes, const InjectorParams& params);
  // leasehold.io/fast-failover: "true" (--fast-failover: no status file, the pod's UID and the
  // container's name in the env).
  static bool fastFailover(const Annotations& notes);
};

}  // namespace leasehold::inject

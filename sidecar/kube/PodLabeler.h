#pragma once
// --pod-label KEY: keeps KEY=true|false on this sidecar's own pod, so that
// `kubectl get pods -l KEY=true` and a Service selector find the leader.
//
// A JSON merge patch ({"metadata":{"labels":{"KEY":"true"}}}, Content-Type
// application/merge-patch+json) per change; only the latest wanted value matters: while a patch
// is in flight or waiting to be retried, newer calls to set() just replace the wanted value.
// Failures are retried with exponential backoff and jitter until the wanted value is applied.
//
// The label lags leadership (by a request at best, by the backoff at worst, forever when the
// process is killed) and must never be used for safety: use /leader and the fencing token.
// Like EventRecorder, give it its own ApiClient so a slow patch never delays a renewal.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kube/ApiTransport.h"
#include "time/Clock.h"

namespace leasehold::kube {

struct PodLabelerOptions {
  time::Duration initialBackoff = std::chrono::milliseconds(500);
  time::Duration maxBackoff = std::chrono::seconds(30);
  std::chrono::milliseconds requestDeadline{5000};
};

struct PodRef {
  std::string ns;
  std::string name;
};

class PodLabeler {
 public:
  PodLabeler(ApiTransport& api, time::Clock& clock, PodRef pod, std::string labelKey,
             std::function<double()> random01, PodLabelerOptions options = {});
  ~PodLabeler();
  PodLabeler(const PodLabeler&) = delete;
  PodLabeler& operator=(const PodLabeler&) = delete;

  // For the log: failures (no credentials in them) and successful changes.
  void setFailureHandler(std::function<void(const std::string&)> f) { onFailure_ = std::move(f); }
  void setAppliedHandler(std::function<void(bool)> f) { onApplied_ = std::move(f); }

  // The value the label should have now.
  void set(bool leader);
  // Runs done once the wanted value is applied, or after `budget`, whichever is first.
  void drain(time::Duration budget, std::function<void()> done);

  // What the pod is known to carry (nullopt: unknown, e.g. after a failed or lost patch).
  std::optional<bool> applied() const { return applied_; }

  static std::string patchBody(const std::string& key, bool value);
  std::string podPath() const;

 private:
  void pump();
  void finishDrainIfSettled();
  void finishDrain();
  bool settled() const { return !inflight_ && (!wanted_ || wanted_ == applied_); }

  ApiTransport& api_;
  time::Clock& clock_;
  PodRef pod_;
  std::string key_;
  std::function<double()> random01_;
  PodLabelerOptions options_;
  std::function<void(const std::string&)> onFailure_;
  std::function<void(bool)> onApplied_;
  std::optional<bool> wanted_;
  std::optional<bool> applied_;
  bool inflight_ = false;
  time::Duration backoff_;
  std::unique_ptr<time::Timer> retryTimer_;
  std::function<void()> drainDone_;
  std::unique_ptr<time::Timer> drainTimer_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube

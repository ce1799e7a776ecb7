#include "kube/PodLabeler.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace leasehold::kube {

PodLabeler::PodLabeler(ApiTransport& api, time::Clock& clock, PodRef pod, std::string labelKey,
                       std::function<double()> random01, PodLabelerOptions options)
    : api_(api),
      clock_(clock),
      pod_(std::move(pod)),
      key_(std::move(labelKey)),
      random01_(std::move(random01)),
      options_(options),
      backoff_(options.initialBackoff),
      retryTimer_(clock.makeTimer([this] { pump(); })),
      drainTimer_(clock.makeTimer([this] { finishDrain(); })) {}

PodLabeler::~PodLabeler() = default;

std::string PodLabeler::patchBody(const std::string& key, bool value) {
  nlohmann::json patch;
  patch["metadata"]["labels"][key] = value ? "true" : "false";
  return patch.dump();
}

std::string PodLabeler::podPath() const {
  return "/api/v1/namespaces/" + pod_.ns + "/pods/" + pod_.name;
}

void PodLabeler::set(bool leader) {
  wanted_ = leader;
  pump();
}

void PodLabeler::pump() {
  // A pending retry keeps its backoff: a burst of changes must not hammer a failing server.
  if (inflight_ || retryTimer_->armed() || !wanted_ || wanted_ == applied_) {
    finishDrainIfSettled();
    return;
  }
  inflight_ = true;
  const bool value = *wanted_;
  std::weak_ptr<char> alive = alive_;
  api_.call(
      {"patch", "PATCH", podPath(), patchBody(key_, value), "application/merge-patch+json",
       options_.requestDeadline},
      [this, alive, value](ApiResponse r) {
        if (alive.expired()) return;
        inflight_ = false;
        if (r.ok()) {
          applied_ = value;
          backoff_ = options_.initialBackoff;
          if (onApplied_) onApplied_(value);
        } else {
          // Unknown now: a timed-out patch may still have been applied.
          applied_.reset();
          if (onFailure_) {
            onFailure_("labelling pod " + pod_.ns + "/" + pod_.name + " failed: " + r.describe() +
                       "; retrying in " + time::formatDuration(backoff_));
          }
          const double jitter = 1.0 + 0.2 * random01_();
          const auto wait = time::Duration(
              static_cast<time::Duration::rep>(static_cast<double>(backoff_.count()) * jitter));
          retryTimer_->armAt(clock_.now() + wait);
          backoff_ = std::min(backoff_ * 2, options_.maxBackoff);
        }
        pump();
      });
}

void PodLabeler::drain(time::Duration budget, std::function<void()> done) {
  drainDone_ = std::move(done);
  if (settled()) return finishDrain();
  drainTimer_->armAt(clock_.now() + budget);
}

void PodLabeler::finishDrainIfSettled() {
  if (drainDone_ && settled()) finishDrain();
}

void PodLabeler::finishDrain() {
  drainTimer_->disarm();
  if (auto done = std::move(drainDone_)) {
    drainDone_ = nullptr;
    done();
  }
}

}  // namespace leasehold::kube

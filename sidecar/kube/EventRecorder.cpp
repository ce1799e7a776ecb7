#include "kube/EventRecorder.h"

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

namespace leasehold::kube {
namespace {

using json = nlohmann::json;

// metav1.Time: RFC 3339 in UTC with whole seconds.
std::string rfc3339Seconds(std::int64_t nanos) {
  const std::time_t seconds = static_cast<std::time_t>(nanos / 1000000000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string hex(std::int64_t value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(value));
  return buf;
}

std::int64_t wallNanos() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

EventRecorder::EventRecorder(ApiClient& api, election::Clock& clock, LeaseEventTarget target,
                             EventRecorderOptions options)
    : api_(api),
      clock_(clock),
      target_(std::move(target)),
      options_(options),
      drainTimer_(clock.makeTimer([this] { finishDrain(); })) {}

EventRecorder::~EventRecorder() = default;

std::string EventRecorder::eventBody(const LeaseEventTarget& target,
                                     const std::optional<election::LeaseRecord>& lease,
                                     const std::string& message, std::int64_t nanos) {
  json involved = {{"kind", "Lease"},
                   {"apiVersion", "coordination.k8s.io/v1"},
                   {"name", target.leaseName},
                   {"namespace", target.ns}};
  if (lease) {
    const json object = json::parse(lease->opaque, nullptr, /*allow_exceptions=*/false);
    if (object.is_object() && object.contains("metadata") && object["metadata"].is_object()) {
      const json& metadata = object["metadata"];
      if (metadata.contains("uid") && metadata["uid"].is_string())
        involved["uid"] = metadata["uid"];
    }
    if (!lease->resourceVersion.empty()) involved["resourceVersion"] = lease->resourceVersion.value;
  }
  const std::string timestamp = rfc3339Seconds(nanos);
  const json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", target.leaseName + "." + hex(nanos)}, {"namespace", target.ns}}},
      {"involvedObject", involved},
      {"reason", "LeaderElection"},
      {"message", message},
      {"type", "Normal"},
      {"source", {{"component", "leasehold"}}},
      {"firstTimestamp", timestamp},
      {"lastTimestamp", timestamp},
      {"count", 1},
      {"reportingComponent", "leasehold"},
      {"reportingInstance", target.reportingInstance},
  };
  return event.dump();
}

void EventRecorder::record(const std::optional<election::LeaseRecord>& lease, std::string message) {
  if (queue_.size() >= options_.maxQueued) {
    queue_.pop_front();  // the newest events say most about the present
    failed_++;
    if (onFailure_) onFailure_("event queue full: dropped the oldest event");
  }
  queue_.push_back(eventBody(target_, lease, message, wallNanos()));
  pump();
}

void EventRecorder::pump() {
  if (inflight_ || queue_.empty()) return;
  inflight_ = true;
  std::string body = std::move(queue_.front());
  queue_.pop_front();
  std::weak_ptr<char> alive = alive_;
  api_.call({"create", "POST", "/api/v1/namespaces/" + target_.ns + "/events", std::move(body),
             "application/json", options_.requestDeadline},
            [this, alive](ApiResponse r) {
              if (alive.expired()) return;
              inflight_ = false;
              if (r.ok()) {
                posted_++;
              } else {
                failed_++;
                if (onFailure_) onFailure_("posting an event failed: " + r.describe());
              }
              pump();
              finishDrainIfIdle();
            });
}

void EventRecorder::drain(election::Duration budget, std::function<void()> done) {
  drainDone_ = std::move(done);
  if (pending() == 0) return finishDrain();
  drainTimer_->armAt(clock_.now() + budget);
}

void EventRecorder::finishDrainIfIdle() {
  if (drainDone_ && pending() == 0) finishDrain();
}

void EventRecorder::finishDrain() {
  drainTimer_->disarm();
  if (auto done = std::move(drainDone_)) {
    drainDone_ = nullptr;
    done();
  }
}

}  // namespace leasehold::kube

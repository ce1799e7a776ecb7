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

EventRecorder::EventRecorder(ApiTransport& api, time::Clock& clock, LeaseEventTarget target,
                             EventRecorderOptions options)
    : api_(api),
      clock_(clock),
      target_(std::move(target)),
      options_(options),
      drainTimer_(clock.makeTimer([this] { finishDrain(); })) {}

EventRecorder::~EventRecorder() = default;

namespace {

json involvedObject(const LeaseEventTarget& target,
                    const std::optional<election::LeaseRecord>& lease) {
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
  return involved;
}

std::string eventName(const LeaseEventTarget& target, std::int64_t nanos) {
  return target.leaseName + "." + hex(nanos);
}

constexpr std::size_t kMaxRemembered = 64;

}  // namespace

std::string EventRecorder::eventBody(const LeaseEventTarget& target,
                                     const std::optional<election::LeaseRecord>& lease,
                                     const std::string& message, std::int64_t nanos) {
  const std::string timestamp = rfc3339Seconds(nanos);
  const json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", eventName(target, nanos)}, {"namespace", target.ns}}},
      {"involvedObject", involvedObject(target, lease)},
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

std::string EventRecorder::repeatPatch(std::int64_t count, std::int64_t nanos) {
  return json{{"count", count}, {"lastTimestamp", rfc3339Seconds(nanos)}}.dump();
}

void EventRecorder::record(const std::optional<election::LeaseRecord>& lease, std::string message) {
  if (queue_.size() >= options_.maxQueued) {
    queue_.pop_front();  // the newest events say most about the present
    failed_++;
    if (onFailure_) onFailure_("event queue full: dropped the oldest event");
  }
  const std::int64_t nanos = wallNanos();
  const json involved = involvedObject(target_, lease);
  std::string key = involved.value("uid", std::string()) + "\n" + message;
  queue_.push_back({std::move(key), eventName(target_, nanos),
                    eventBody(target_, lease, message, nanos), nanos});
  pump();
}

void EventRecorder::pump() {
  if (inflight_ || queue_.empty()) return;
  Pending event = std::move(queue_.front());
  queue_.pop_front();
  const auto seen = postedByKey_.find(event.key);
  if (seen == postedByKey_.end()) return post(std::move(event));
  patch(std::move(event), seen->second);
}

void EventRecorder::post(Pending event) {
  inflight_ = true;
  std::weak_ptr<char> alive = alive_;
  std::string body = std::move(event.body);
  api_.call({"create", "POST", "/api/v1/namespaces/" + target_.ns + "/events", std::move(body),
             "application/json", options_.requestDeadline},
            [this, alive, key = std::move(event.key), name = std::move(event.name)](ApiResponse r) {
              if (alive.expired()) return;
              if (r.ok()) {
                if (postedByKey_.size() >= kMaxRemembered) postedByKey_.clear();
                postedByKey_[key] = Posted{name, 1};
              }
              answered(r.ok(), "posting an event", r);
            });
}

void EventRecorder::patch(Pending event, Posted posted) {
  inflight_ = true;
  std::weak_ptr<char> alive = alive_;
  const std::int64_t count = posted.count + 1;
  api_.call(
      {"patch", "PATCH", "/api/v1/namespaces/" + target_.ns + "/events/" + posted.name,
       repeatPatch(count, event.nanos), "application/merge-patch+json", options_.requestDeadline},
      [this, alive, event = std::move(event), count](ApiResponse r) mutable {
        if (alive.expired()) return;
        if (r.code == 404) {
          // Expired (or deleted): record it afresh, ahead of anything queued after it.
          inflight_ = false;
          postedByKey_.erase(event.key);
          queue_.push_front(std::move(event));
          return pump();
        }
        if (const auto it = postedByKey_.find(event.key); r.ok() && it != postedByKey_.end())
          it->second.count = count;
        answered(r.ok(), "updating a repeated event", r);
      });
}

void EventRecorder::answered(bool ok, const std::string& what, const ApiResponse& r) {
  inflight_ = false;
  if (ok) {
    posted_++;
  } else {
    failed_++;
    if (onFailure_) onFailure_(what + " failed: " + r.describe());
  }
  pump();
  finishDrainIfIdle();
}

void EventRecorder::drain(time::Duration budget, std::function<void()> done) {
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

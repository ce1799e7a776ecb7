#include "kube/LeaseCandidate.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "kube/LeaseCodec.h"

namespace leasehold::kube {

namespace {
using nlohmann::json;

std::optional<time::WallTime> specTime(const json& o, const char* field) {
  const auto spec = o.find("spec");
  if (spec == o.end() || !spec->is_object()) return std::nullopt;
  const auto t = spec->find(field);
  if (t == spec->end() || !t->is_string()) return std::nullopt;
  return parseMicroTime(t->get<std::string>());
}

std::string resourceVersionOf(const json& o) {
  const auto meta = o.find("metadata");
  if (meta == o.end() || !meta->is_object()) return "";
  const auto rv = meta->find("resourceVersion");
  return rv != meta->end() && rv->is_string() ? rv->get<std::string>() : "";
}
}  // namespace

LeaseCandidate::LeaseCandidate(ApiTransport& api, time::Clock& clock, LeaseCandidateSpec spec,
                               std::function<double()> random01, LeaseCandidateOptions options)
    : api_(api),
      clock_(clock),
      spec_(std::move(spec)),
      random01_(std::move(random01)),
      options_(options),
      renewTimer_(clock.makeTimer([this] { renewSoon(false); })),
      retryTimer_(clock.makeTimer([this] {
        if (!stopped_ && !inflight_) send(pending_);
      })),
      watchTimer_(clock.makeTimer([this] {
        // A broken watch: read the object first (a ping may have been missed), then watch.
        if (!stopped_ && !inflight_ && !retryTimer_->armed()) send(Next::kRead);
      })),
      tieTimer_(clock.makeTimer([this] { checkTie(); })),
      moveTimer_(clock.makeTimer([this] { move(); })),
      splitter_(1024 * 1024),
      backoff_(options.initialBackoff),
      watchBackoff_(options.initialBackoff) {
  if (spec_.emulationVersion.empty()) spec_.emulationVersion = spec_.binaryVersion;
}

LeaseCandidate::~LeaseCandidate() {
  if (stream_) stream_->cancel();
}

std::string LeaseCandidate::collectionPath() const {
  return "/apis/coordination.k8s.io/v1beta1/namespaces/" + spec_.ns + "/leasecandidates";
}

std::string LeaseCandidate::objectPath() const {
  return collectionPath() + "/" + spec_.name;
}

std::string LeaseCandidate::body(const std::string& object, const std::string& renewTime) const {
  json o = json::parse(object.empty() ? "{}" : object, nullptr, false);
  if (!o.is_object()) o = json::object();
  o["apiVersion"] = "coordination.k8s.io/v1beta1";
  o["kind"] = "LeaseCandidate";
  if (!o["metadata"].is_object()) o["metadata"] = json::object();
  o["metadata"]["name"] = spec_.name;
  o["metadata"]["namespace"] = spec_.ns;
  if (!o["spec"].is_object()) o["spec"] = json::object();
  json& s = o["spec"];
  s["leaseName"] = spec_.leaseName;
  s["binaryVersion"] = spec_.binaryVersion;
  s["emulationVersion"] = spec_.emulationVersion;
  s["strategy"] = spec_.strategy;
  s["renewTime"] = renewTime;
  return o.dump();
}

bool LeaseCandidate::pinged(const std::string& object) {
  const json o = json::parse(object, nullptr, false);
  if (!o.is_object()) return false;
  const auto ping = specTime(o, "pingTime");
  const auto renew = specTime(o, "renewTime");
  return ping && (!renew || *ping > *renew);
}

void LeaseCandidate::start() {
  if (started_ || stopped_) return;
  started_ = true;
  send(Next::kCreate);
}

void LeaseCandidate::stop(std::function<void()> done) {
  if (stopFinished_) {
    if (done) done();
    return;
  }
  if (done) {
    auto previous = std::move(stopDone_);
    stopDone_ = [previous = std::move(previous), done = std::move(done)] {
      if (previous) previous();
      done();
    };
  }
  if (stopped_) return;  // already stopping: done runs with the first
  stopped_ = true;
  renewTimer_->disarm();
  retryTimer_->disarm();
  watchTimer_->disarm();
  tieTimer_->disarm();
  moveTimer_->disarm();
  if (stream_) {
    stream_->cancel();
    stream_.reset();
  }
  // A create in flight could land after a DELETE sent beside it: delete once it has answered.
  if (!inflight_) sendDelete();
}

void LeaseCandidate::deleteObject(std::function<void(const ApiResponse&)> answered) {
  inflight_ = true;
  std::weak_ptr<char> alive = alive_;
  api_.call({"delete", "DELETE", objectPath(), "", "application/json", options_.requestDeadline},
            [this, alive, answered = std::move(answered)](ApiResponse r) {
              if (alive.expired()) return;
              inflight_ = false;
              answered(r);
            });
}

void LeaseCandidate::sendDelete() {
  if (!started_) return finishStop();
  deleteObject([this](const ApiResponse& r) {
    if (!r.ok() && r.code != 404 && onProblem_) {
      onProblem_("deleting LeaseCandidate " + spec_.ns + "/" + spec_.name +
                 " failed: " + r.describe());
    }
    finishStop();
  });
}

void LeaseCandidate::finishStop() {
  stopFinished_ = true;
  auto finished = std::move(stopDone_);
  stopDone_ = nullptr;
  if (finished) finished();
}

bool LeaseCandidate::tiedWithSmaller(const std::string& list) const {
  const json l = json::parse(list, nullptr, false);
  if (!l.is_object() || !l.contains("items") || !l["items"].is_array()) return false;
  const auto created = [](const json& c) {
    const auto m = c.find("metadata");
    if (m == c.end() || !m->is_object()) return std::string();
    const auto t = m->find("creationTimestamp");
    return t != m->end() && t->is_string() ? t->get<std::string>() : std::string();
  };
  const auto nameOf = [](const json& c) { return c.value("/metadata/name"_json_pointer, ""); };
  const auto leaseOf = [](const json& c) { return c.value("/spec/leaseName"_json_pointer, ""); };
  std::string ours;
  for (const auto& c : l["items"]) {
    if (c.is_object() && nameOf(c) == spec_.name) ours = created(c);
  }
  if (ours.empty()) return false;
  for (const auto& c : l["items"]) {
    if (!c.is_object() || leaseOf(c) != spec_.leaseName) continue;
    const std::string name = nameOf(c);
    if (name < spec_.name && created(c) == ours) return true;
  }
  return false;
}

void LeaseCandidate::checkTie() {
  if (stopped_ || tieChecksLeft_ <= 0) return;
  --tieChecksLeft_;
  std::weak_ptr<char> alive = alive_;
  api_.call({"list", "GET", collectionPath(), "", "application/json", options_.requestDeadline},
            [this, alive](ApiResponse r) {
              if (alive.expired() || stopped_) return;
              if (r.ok() && tiedWithSmaller(r.body)) {
                tieChecksLeft_ = 0;
                tieTimer_->disarm();
                const auto wait =
                    std::chrono::seconds(1) +
                    time::Duration(static_cast<time::Duration::rep>(
                        random01_() *
                        static_cast<double>(time::Duration(std::chrono::seconds(1)).count())));
                if (onProblem_) {
                  onProblem_("LeaseCandidate " + spec_.ns + "/" + spec_.name +
                             " shares its creation second with another candidate for " +
                             spec_.leaseName +
                             ", which makes the controller's choice unstable: "
                             "creating it again in " +
                             time::formatDuration(wait));
                }
                return moveTimer_->armAt(clock_.now() + wait);
              }
              if (tieChecksLeft_ > 0) tieTimer_->armAt(clock_.now() + options_.tieCheckDelay);
            });
}

void LeaseCandidate::move() {
  if (stopped_) return;
  if (inflight_) return moveTimer_->armAt(clock_.now() + std::chrono::milliseconds(100));
  ++moves_;
  if (stream_) {  // our own DELETED event must not create it a second time
    stream_->cancel();
    stream_.reset();
  }
  watchTimer_->disarm();
  deleteObject([this](const ApiResponse& r) {
    if (stopped_) return sendDelete();
    if (!r.ok() && r.code != 404 && onProblem_) {
      onProblem_("LeaseCandidate " + spec_.ns + "/" + spec_.name +
                 ": deleting it to create it again failed: " + r.describe());
    }
    object_.clear();
    send(Next::kCreate);
  });
}

void LeaseCandidate::send(Next what) {
  inflight_ = true;
  pending_ = what;
  ApiRequest req;
  switch (what) {
    case Next::kCreate:
      req = {"create",           "POST",
             collectionPath(),   body("", time::formatMicroTime(clock_.wallNow())),
             "application/json", options_.requestDeadline};
      renewWanted_ = false;
      break;
    case Next::kRenew:
      req = {"update",           "PUT",
             objectPath(),       body(object_, time::formatMicroTime(clock_.wallNow())),
             "application/json", options_.requestDeadline};
      renewWanted_ = false;
      break;
    case Next::kRead:
      req = {"get", "GET", objectPath(), "", "application/json", options_.requestDeadline};
      break;
  }
  std::weak_ptr<char> alive = alive_;
  api_.call(std::move(req), [this, alive, what](ApiResponse r) {
    if (alive.expired()) return;
    inflight_ = false;
    if (stopped_) return sendDelete();  // the delete waited for this answer
    onAnswer(what, r);
  });
}

void LeaseCandidate::onAnswer(Next what, const ApiResponse& r) {
  if (r.ok()) {
    keep(r.body);
    backoff_ = options_.initialBackoff;
    lastProblem_.clear();
    if (what == Next::kCreate && moves_ < options_.maxTieMoves) {
      tieChecksLeft_ = 2;
      checkTie();
    }
    if (what != Next::kRead) {
      if (onWritten_) onWritten_(pingWanted_);
      pingWanted_ = false;
      renewTimer_->armAt(clock_.now() + options_.renewInterval);
    } else if (pinged(object_)) {
      renewWanted_ = true;
      pingWanted_ = true;
    }
    if (renewWanted_) return send(Next::kRenew);
    if (!stream_) watch();
    return;
  }
  if (r.code == 409 && what != Next::kRead) {
    // Create: it exists already (an earlier process of ours). Renewal: somebody wrote in
    // between (a ping). Either way: read it, then renew it.
    renewWanted_ = true;
    return send(Next::kRead);
  }
  if (r.code == 404 && what != Next::kCreate) {
    object_.clear();
    return send(Next::kCreate);  // garbage collected or deleted: publish it again
  }
  if (r.code == 404) {
    return retry(what,
                 "the server does not serve coordination.k8s.io/v1beta1 leasecandidates "
                 "(--coordinated needs the CoordinatedLeaderElection feature gate and "
                 "--runtime-config=coordination.k8s.io/v1beta1=true on kube-apiserver)");
  }
  if (what != Next::kRead) renewWanted_ = true;
  retry(what == Next::kCreate ? Next::kCreate : Next::kRead, r.describe());
}

void LeaseCandidate::retry(Next what, const std::string& why) {
  const std::string problem = "LeaseCandidate " + spec_.ns + "/" + spec_.name + ": " + why;
  if (onProblem_ && problem != lastProblem_) onProblem_(problem + " (retrying)");
  lastProblem_ = problem;
  pending_ = what;
  const double jitter = 1.0 + 0.2 * random01_();
  retryTimer_->armAt(clock_.now() + time::Duration(static_cast<time::Duration::rep>(
                                        static_cast<double>(backoff_.count()) * jitter)));
  backoff_ = std::min(backoff_ * 2, options_.maxBackoff);
}

void LeaseCandidate::keep(const std::string& object) {
  const json o = json::parse(object, nullptr, false);
  if (!o.is_object()) return;
  object_ = object;
  const std::string rv = resourceVersionOf(o);
  if (!rv.empty()) resourceVersion_ = rv;
}

void LeaseCandidate::renewSoon(bool ping) {
  if (stopped_) return;
  renewWanted_ = true;
  pingWanted_ = pingWanted_ || ping;
  if (inflight_ || retryTimer_->armed()) return;  // the answer or the retry renews
  send(object_.empty() ? Next::kCreate : Next::kRenew);
}

void LeaseCandidate::watch() {
  if (stopped_ || resourceVersion_.empty()) return;
  std::weak_ptr<char> alive = alive_;
  const int timeout =
      options_.watchTimeoutSeconds + static_cast<int>(random01_() * options_.watchTimeoutSeconds);
  const std::string path = collectionPath() + "?allowWatchBookmarks=true" +
                           "&fieldSelector=metadata.name%3D" + spec_.name +
                           "&resourceVersion=" + resourceVersion_ +
                           "&timeoutSeconds=" + std::to_string(timeout) + "&watch=true";
  splitter_.reset();
  ApiStreamCallbacks cb;
  cb.onStatus = [this, alive](int status, const std::string&) {
    if (alive.expired()) return;
    stream_.reset();
    watchFailed("watch: HTTP " + std::to_string(status));
  };
  cb.onData = [this, alive](std::string_view bytes) {
    if (alive.expired()) return;
    if (!splitter_.feed(bytes, [this](std::string_view line) { onLine(line); })) {
      watchFailed("watch: line too long");
    }
  };
  cb.onEnd = [this, alive](std::optional<std::string> error) {
    if (alive.expired()) return;
    stream_.reset();
    if (error) return watchFailed("watch ended: " + *error);
    watch();  // timeoutSeconds passed: resume at once
  };
  stream_ = api_.stream({"watch", "GET", path, "", "application/json", options_.requestDeadline},
                        std::move(cb), std::chrono::seconds(timeout + 30));
}

void LeaseCandidate::onLine(std::string_view line) {
  if (line.empty() || !stream_) return;
  const json e = json::parse(line, nullptr, false);
  const auto type = e.is_object() && e.contains("type") && e["type"].is_string()
                        ? e["type"].get<std::string>()
                        : std::string();
  const auto object = e.is_object() ? e.find("object") : e.end();
  if (type.empty() || object == e.end() || !object->is_object()) {
    return watchFailed("watch: malformed event");
  }
  if (type == "ERROR") return watchFailed("watch error (expired resourceVersion?)");
  watchBackoff_ = options_.initialBackoff;
  if (type == "BOOKMARK") {
    const std::string rv = resourceVersionOf(*object);
    if (!rv.empty()) resourceVersion_ = rv;
    return;
  }
  if (type == "DELETED") {
    object_.clear();
    resourceVersion_ = resourceVersionOf(*object);
    return renewSoon(false);  // somebody deleted it: publish it again
  }
  keep(object->dump());
  if (pinged(object_)) renewSoon(true);
}

void LeaseCandidate::watchFailed(const std::string& why) {
  if (stream_) {
    stream_->cancel();
    stream_.reset();
  }
  if (stopped_) return;
  if (onProblem_) onProblem_("LeaseCandidate " + spec_.ns + "/" + spec_.name + ": " + why);
  watchTimer_->armAt(clock_.now() + watchBackoff_);
  watchBackoff_ = std::min(watchBackoff_ * 2, options_.maxBackoff);
}

}  // namespace leasehold::kube

#include "kubectl/LeaseFollower.h"

#include "kube/LeaseCodec.h"
#include "kubectl/FailureMessage.h"

namespace leasehold::kubectl {
namespace {

constexpr int kWatchSeconds = 300;
constexpr int kMaxFailuresInARow = 3;

kube::ApiResponse responseOf(int code, const std::string& body) {
  kube::ApiResponse r;
  r.code = code;
  r.body = body;
  kube::ApiStatus s;
  if (kube::decodeStatus(body, s)) r.status = s;
  return r;
}

}  // namespace

LeaseFollower::LeaseFollower(kube::ApiTransport& api, time::Clock& clock, std::string server,
                             std::string ns, std::string name,
                             std::chrono::milliseconds requestTimeout, Callbacks callbacks)
    : api_(api),
      clock_(clock),
      server_(std::move(server)),
      ns_(std::move(ns)),
      name_(std::move(name)),
      requestTimeout_(requestTimeout),
      cb_(std::move(callbacks)) {}

LeaseFollower::~LeaseFollower() {
  stop();
}

std::string LeaseFollower::itemPath() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + ns_ + "/leases/" + name_;
}

void LeaseFollower::start() {
  get();
}

void LeaseFollower::startFrom(const std::string& resourceVersion) {
  resourceVersion_ = resourceVersion;
  watch();
}

void LeaseFollower::stop() {
  stopped_ = true;
  if (stream_) stream_->cancel();
  stream_.reset();
  retry_.reset();
}

void LeaseFollower::fail(const std::string& line) {
  stop();
  if (cb_.onFailure) cb_.onFailure(line);
}

void LeaseFollower::get() {
  std::weak_ptr<char> alive = alive_;
  api_.call({"get", "GET", itemPath(), "", "application/json", requestTimeout_},
            [this, alive](kube::ApiResponse r) {
              if (alive.expired() || stopped_) return;
              if (!r.ok()) return fail(FailureMessage::describe(r, {"get", ns_, name_}, server_));
              election::LeaseRecord lease;
              std::string error;
              if (!kube::decodeLease(r.body, lease, error)) {
                return fail("lease \"" + name_ + "\": " + error);
              }
              resourceVersion_ = lease.resourceVersion.value;
              if (cb_.onLease) cb_.onLease(lease);
              if (!stopped_) watch();
            });
}

void LeaseFollower::watch() {
  std::weak_ptr<char> alive = alive_;
  const std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + ns_ +
                           "/leases?allowWatchBookmarks=true&fieldSelector=metadata.name%3D" +
                           name_ + "&resourceVersion=" + resourceVersion_ +
                           "&timeoutSeconds=" + std::to_string(kWatchSeconds) + "&watch=true";
  splitter_.reset();
  kube::ApiStreamCallbacks cb;
  cb.onStatus = [this, alive](int status, const std::string& body) {
    if (alive.expired() || stopped_) return;
    stream_.reset();
    if (status == 410) return get();  // our resourceVersion is older than the server keeps
    const auto r = responseOf(status, body);
    if (status == 0) return broken(FailureMessage::describe(r, {"watch", ns_, name_}, server_));
    fail(FailureMessage::describe(r, {"watch", ns_, name_}, server_));
  };
  cb.onData = [this, alive](std::string_view bytes) {
    if (alive.expired() || stopped_) return;
    if (!splitter_.feed(bytes, [this](std::string_view line) { onLine(line); })) {
      broken("watch: a line longer than the limit");
    }
  };
  cb.onEnd = [this, alive](std::optional<std::string> error) {
    if (alive.expired() || stopped_) return;
    stream_.reset();
    if (error) return broken("the watch of lease \"" + name_ + "\" broke: " + *error);
    watch();  // timeoutSeconds passed: resume where we were
  };
  stream_ = api_.stream({"watch", "GET", path, "", "application/json", requestTimeout_},
                        std::move(cb), std::chrono::seconds(kWatchSeconds + 30));
}

void LeaseFollower::broken(const std::string& why) {
  if (stream_) stream_->cancel();
  stream_.reset();
  if (++failuresInARow_ >= kMaxFailuresInARow) return fail(why);
  std::weak_ptr<char> alive = alive_;
  retry_ = clock_.makeTimer([this, alive] {
    if (!alive.expired() && !stopped_) get();
  });
  retry_->armAt(clock_.now() + std::chrono::milliseconds(500) * failuresInARow_);
}

void LeaseFollower::onLine(std::string_view line) {
  if (line.empty() || !stream_) return;
  kube::WatchEvent e;
  std::string error;
  if (!kube::decodeWatchEvent(line, e, error)) return broken("watch: " + error);
  switch (e.type) {
    case kube::WatchEvent::Type::kError:
      if (e.status && e.status->code == 410) {
        stream_->cancel();
        stream_.reset();
        return get();
      }
      return broken("watch error: " + (e.status ? e.status->message : std::string("?")));
    case kube::WatchEvent::Type::kBookmark:
      if (!e.resourceVersion.empty()) resourceVersion_ = e.resourceVersion;
      return;
    case kube::WatchEvent::Type::kDeleted:
      resourceVersion_ = e.resourceVersion;
      failuresInARow_ = 0;
      if (cb_.onDeleted) cb_.onDeleted();
      return;
    case kube::WatchEvent::Type::kAdded:
    case kube::WatchEvent::Type::kModified:
      resourceVersion_ = e.resourceVersion;
      failuresInARow_ = 0;
      if (e.lease && cb_.onLease) cb_.onLease(*e.lease);
      return;
  }
}

}  // namespace leasehold::kubectl

#include "kube/LeaseGroupWatch.h"

#include <algorithm>

namespace leasehold::kube {

namespace {
constexpr std::chrono::milliseconds kMaxBackoff{30000};
constexpr std::chrono::milliseconds kForbiddenRetry{60000};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '=') {
      out += "%3D";
    } else if (c == ',') {
      out += "%2C";
    } else if (c == '/') {
      out += "%2F";
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

LeaseGroupWatch::LeaseGroupWatch(ApiTransport& api, time::Clock& clock,
                                 LeaseGroupObserver& observer, LeaseGroupWatchOptions options,
                                 std::function<double()> random01)
    : api_(api),
      clock_(clock),
      observer_(observer),
      options_(std::move(options)),
      random01_(std::move(random01)),
      splitter_(1024 * 1024) {
  retryTimer_ = clock_.makeTimer([this] {
    if (relistNext_) {
      list();
    } else {
      watchFrom(resourceVersion_);
    }
  });
}

LeaseGroupWatch::~LeaseGroupWatch() {
  stop();
}

void LeaseGroupWatch::start() {
  stopped_ = false;
  list();
}

void LeaseGroupWatch::stop() {
  stopped_ = true;
  retryTimer_->disarm();
  if (stream_) stream_->cancel();
  stream_.reset();
}

std::string LeaseGroupWatch::collectionPath() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + options_.ns + "/leases";
}

std::string LeaseGroupWatch::selector() const {
  return "labelSelector=" + escape(options_.labelSelector);
}

void LeaseGroupWatch::setHealthy(bool healthy, const std::string& why) {
  if (healthy == healthy_ && reportedOnce_) return;
  const bool wasReported = reportedOnce_;
  healthy_ = healthy;
  reportedOnce_ = true;
  if (options_.onProblem && (!healthy || wasReported)) {
    options_.onProblem(healthy ? "group watch restored"
                               : "group watch unavailable, polling instead: " + why);
  }
  observer_.onGroupWatchState(healthy);
}

void LeaseGroupWatch::failed(const std::string& why, bool relist) {
  if (failures_++ == 0 && healthy_) {
    if (stream_) {
      stream_->cancel();
      stream_.reset();
    }
    if (relist) return list();
    return watchFrom(resourceVersion_);
  }
  retryLater(why, relist);
}

void LeaseGroupWatch::retryLater(const std::string& why, bool relist) {
  if (stream_) {
    stream_->cancel();
    stream_.reset();
  }
  if (stopped_) return;
  setHealthy(false, why);
  relistNext_ = relist;
  retryTimer_->armAt(clock_.now() + backoff_);
  backoff_ = std::clamp(backoff_ * 2, std::chrono::milliseconds(500), kMaxBackoff);
}

void LeaseGroupWatch::list() {
  if (stopped_) return;
  std::weak_ptr<char> alive = alive_;
  api_.call({"list", "GET", collectionPath() + "?" + selector(), "", "application/json",
             options_.requestDeadline},
            [this, alive](ApiResponse r) {
              if (alive.expired() || stopped_) return;
              if (!r.ok()) {
                if (r.code == 401 || r.code == 403) backoff_ = std::max(backoff_, kForbiddenRetry);
                return retryLater("list: " + r.describe(), true);
              }
              std::vector<NamedLease> items;
              std::string error;
              if (!decodeLeaseListItems(r.body, resourceVersion_, items, error)) {
                return retryLater("list: " + error, true);
              }
              justListed_ = true;
              observer_.onGroupListed(items);
              watchFrom(resourceVersion_);
            });
}

void LeaseGroupWatch::watchFrom(const std::string& rv) {
  if (stopped_) return;
  std::weak_ptr<char> alive = alive_;
  const int base = options_.watchTimeoutSeconds;
  const int timeout = base + static_cast<int>(random01_() * static_cast<double>(base));
  const std::string path = collectionPath() + "?allowWatchBookmarks=true&" + selector() +
                           "&resourceVersion=" + rv + "&timeoutSeconds=" + std::to_string(timeout) +
                           "&watch=true";
  splitter_.reset();
  ApiStreamCallbacks cb;
  cb.onStatus = [this, alive](int status, const std::string& body) {
    if (alive.expired()) return;
    stream_.reset();
    ApiResponse r;
    r.code = status;
    ApiStatus s;
    if (decodeStatus(body, s)) r.status = s;
    if (status == 410) return list();
    if (status == 401 || status == 403) backoff_ = std::max(backoff_, kForbiddenRetry);
    retryLater("watch: " + r.describe(), true);
  };
  cb.onOpen = [this, alive] {
    if (!alive.expired()) setHealthy(true, "");
  };
  cb.onData = [this, alive](std::string_view bytes) {
    if (alive.expired()) return;
    if (!splitter_.feed(bytes, [this](std::string_view line) { onLine(line); })) {
      retryLater("watch: line too long", true);
    }
  };
  cb.onEnd = [this, alive](std::optional<std::string> error) {
    if (alive.expired()) return;
    stream_.reset();
    if (error) return failed("watch ended: " + *error, false);
    failures_ = 0;
    watchFrom(resourceVersion_);
  };
  stream_ = api_.stream({"watch", "GET", path, "", "application/json", options_.requestDeadline},
                        std::move(cb), std::chrono::seconds(timeout + 30));
}

void LeaseGroupWatch::onLine(std::string_view line) {
  if (line.empty() || !stream_) return;
  WatchEvent e;
  std::string error;
  if (!decodeWatchEvent(line, e, error)) return retryLater("watch: " + error, true);
  switch (e.type) {
    case WatchEvent::Type::kError:
      if (e.status && e.status->code == 410 && !justListed_) {
        stream_->cancel();
        stream_.reset();
        return list();
      }
      return failed("watch error: " + (e.status ? e.status->message : ""), true);
    case WatchEvent::Type::kBookmark:
      if (!e.resourceVersion.empty()) resourceVersion_ = e.resourceVersion;
      return;
    case WatchEvent::Type::kDeleted:
    case WatchEvent::Type::kAdded:
    case WatchEvent::Type::kModified:
      resourceVersion_ = e.resourceVersion;
      backoff_ = std::chrono::milliseconds(500);
      failures_ = 0;
      justListed_ = false;
      if (e.type == WatchEvent::Type::kDeleted) return observer_.onGroupLease(e.name, std::nullopt);
      return observer_.onGroupLease(e.name, e.lease);
  }
}

}  // namespace leasehold::kube
